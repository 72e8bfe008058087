// Issue 39: hole punching with Neuron's own programs across the namespace network (test/network): the tracker in the
// cloud (its STUN on its port's number), hosts in home A (a router that keeps source ports) and home B (one that
// randomises them), neither mapping a port, so the tracker proves no endpoint for either; chats from the laptop (no
// NAT) and from a computer inside home A. Where ICE connects the pair (ice-pairs.test.ts measured which do), the
// client's frames take a punched channel and the tracker relays no byte for that host; where it cannot, the chat
// falls back to the tracker's relay. Hop to hop, home A's host punches its own channel to home C's (both keep source
// ports), so that seam carries no relay either; and a router restart under a punched path (its uplink down past
// LINK_SILENCE_MS, its connections forgotten) fails the chat over to another home. Every pairing gives llama.cpp's
// greedy tokens.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { oracleGreedy, oracleModel } from '../../native/oracle'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../models'
import type { NeuronProcess } from '../processes'
import { buildHomeNetwork, type HomeNetwork, type Place, whyNoNamespaces } from '.'
import { neuronIn, swarmChildIn } from './programs'
import { restartRouter } from './router-state'

const TOKENS = 24
const PORT = 7070
const why = whyNoNamespaces()

type Forwarding = 'client-relayed' | 'hop-to-hop'

interface HopRow {
  hostId: string
  reached: 'direct' | 'punched' | 'relayed'
  hiddenBytesIn?: number
}

interface HostRow {
  hostId: string
  endpoint: string | null
  relayedBytes?: number
}

describe.skipIf(why !== undefined)(
  `chats punched through home routers${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    let dir = ''
    let cleanup: () => Promise<void> = async () => {}
    let manifest: Manifest
    let trackerUrl = ''
    let prompt: number[] = []
    let oracle: number[] = []
    const hostIds: Partial<Record<Place, string>> = {}
    const hostProcesses: Partial<Record<Place, NeuronProcess>> = {}
    const processes: NeuronProcess[] = []
    const start = (place: Place, args: string[]) => {
      const p = neuronIn(net, place, args)
      processes.push(p)
      return p
    }

    async function hosts(): Promise<HostRow[]> {
      const child = swarmChildIn(net, 'laptop', ['hosts', trackerUrl])
      processes.push(child)
      const line = (await child.waitFor(/^\{"hosts".*$/m, 60_000))[0]
      return (JSON.parse(line) as { hosts: HostRow[] }).hosts
    }

    const relayedBytes = async (place: Place) =>
      (await hosts()).find((h) => h.hostId === hostIds[place])?.relayedBytes ?? Number.NaN

    /**
     * A greedy chat from `place`: its tokens, route and failovers, and the lines its client logged about punching.
     * `during`: acts on the chat while it runs (given the child, whose lines say its route and each token).
     */
    async function chatFrom(
      place: Place,
      forwarding: Forwarding = 'client-relayed',
      during: (child: NeuronProcess) => Promise<void> = async () => {},
    ): Promise<{
      tokens: number[]
      route: HopRow[]
      failovers: { hostId: string }[]
      punched: string[]
      relayed: string[]
    }> {
      const args = ['chat', trackerUrl, manifest.modelId, String(TOKENS), prompt.join(','), forwarding]
      const child = swarmChildIn(net, place, args)
      processes.push(child)
      const acting = during(child)
      const line = (await child.waitFor(/^\{"done".*$/m, 180_000))[0]
      await acting
      const done = JSON.parse(line) as { done: { tokens: number[]; route: HopRow[]; failovers: { hostId: string }[] } }
      const lines = child.output().split('\n')
      const named = (prefix: string) =>
        lines.flatMap((l) => (/\[client\] (.*) host ([0-9a-f]{20})/.exec(l)?.[1]?.startsWith(prefix) ? [l] : []))
      return {
        ...done.done,
        punched: named('punched a channel to'),
        relayed: named('no punched channel to'),
      }
    }

    /** Starts `neuron host` in `place` serving `blocks`; resolves once it is ready, with its id noted. */
    async function startHost(place: Place, blocks: string): Promise<void> {
      const host = start(place, [
        ...['host', '--tracker', trackerUrl, '--model', manifest.modelId, '--blocks', blocks],
        ...['--data-dir', join(dir, place), '--threads', '1'],
      ])
      hostProcesses[place] = host
      hostIds[place] = (await host.waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1]
    }

    const mentions = (lines: string[], place: Place) => lines.some((l) => l.includes(hostIds[place] ?? '-'))

    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir('neuron-punched-homes-'))
      net = await buildHomeNetwork({ links: { a: { delayMs: 5 }, b: { delayMs: 5 } }, upnp: false })
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
      const model = await oracleModel(STORIES_260K)
      prompt = [...model.tokenize('Once upon a time', true)]
      oracle = (await oracleGreedy(model, prompt, TOKENS, manifest.nVocab, { threads: 1 })).map((s) => s.token)
      await model.dispose()
      const tracker = start('cloud', [
        'tracker',
        ...['--host', '0.0.0.0', '--port', String(PORT), '--db', join(dir, 'tracker.sqlite')],
        ...['--heartbeat-ms', '500', '--new-key-grant-micro', '10000000', '--probation-probes', '1'],
      ])
      await tracker.waitFor(/tracker listening on/, 60_000)
      trackerUrl = `http://${net.addresses.cloud}:${PORT}`
      // the publisher seeds on (stopped with the rest): a host started later behind a router that maps no port can
      // fetch only from it, not from another such host
      const publisher = start('laptop', ['publish', join(dir, 'packed'), '--tracker', trackerUrl, '--data-dir', dir])
      await publisher.waitFor(/published stories260k/, 120_000)
      await Promise.all([startHost('hostA', '0:2'), startHost('hostB', '2:5')])
      // no router maps a port: the tracker proves no endpoint for either host
      const rows = await hosts()
      for (const place of ['hostA', 'hostB'] as const)
        expect(rows.find((h) => h.hostId === hostIds[place])?.endpoint).toBeNull()
    }, 600_000)

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await net?.close()
      await cleanup()
    })

    it("from the laptop: both homes punched, llama.cpp's greedy tokens, and the tracker relays no byte", async () => {
      const before = { a: await relayedBytes('hostA'), b: await relayedBytes('hostB') }
      const chat = await chatFrom('laptop')
      expect(chat.tokens).toEqual(oracle)
      expect(mentions(chat.punched, 'hostA') && mentions(chat.punched, 'hostB')).toBe(true)
      expect(chat.relayed).toEqual([])
      expect({ a: await relayedBytes('hostA'), b: await relayedBytes('hostB') }).toEqual(before)
    }, 300_000)

    it("from inside home A: its own host punched on the LAN; home B's as ICE allows, the same tokens", async () => {
      const before = { a: await relayedBytes('hostA'), b: await relayedBytes('hostB') }
      const chat = await chatFrom('peerA')
      expect(chat.tokens).toEqual(oracle)
      expect(mentions(chat.punched, 'hostA')).toBe(true)
      expect(await relayedBytes('hostA')).toBe(before.a)
      // a randomising router against one that filters by port: the pair ICE_PAIR_AB says (a punch that cannot work
      // holds the chat PUNCH_WAIT_MS, then the relay carries it while the punch runs out)
      expect(mentions(chat.punched, 'hostB')).toBe(ICE_PAIR_AB)
      expect((await relayedBytes('hostB')) > before.b).toBe(!ICE_PAIR_AB)
    }, 300_000)

    const hopToHop =
      "hop to hop from the laptop: home A's host punches its own channel to home C's, and no seam crosses a relay"
    it(hopToHop, async () => {
      // home C's host (a router that keeps source ports, no port mapped) serves home B's blocks, fetched from it;
      // then home B's leaves
      await startHost('hostC', '2:5')
      await hostProcesses.hostB?.stop(2000)
      const rows = await hosts()
      expect(rows.find((h) => h.hostId === hostIds.hostC)?.endpoint).toBeNull()
      const before = { a: await relayedBytes('hostA'), c: await relayedBytes('hostC') }
      const chat = await chatFrom('laptop', 'hop-to-hop')
      expect(chat.tokens).toEqual(oracle)
      expect(chat.route.map((h) => h.hostId)).toEqual([hostIds.hostA, hostIds.hostC])
      expect(chat.route.map((h) => h.reached)).toEqual(['punched', 'punched'])
      // every step's hidden states went from home A to home C over A's own channel, none through the client
      expect(chat.route[0]?.hiddenBytesIn).toBe(0)
      expect({ a: await relayedBytes('hostA'), c: await relayedBytes('hostC') }).toEqual(before)
    }, 420_000)

    const restart =
      "a router restart under a punched path (down past the link's silence bound, its connections forgotten): the " +
      'chat fails over to another home, the same tokens'
    it(restart, async () => {
      // home B's host serves [2, 5) again beside home C's: a failover has somewhere to go
      await startHost('hostB', '2:5')
      const homeOf: Partial<Record<string, 'b' | 'c'>> = {
        [hostIds.hostB ?? '-']: 'b',
        [hostIds.hostC ?? '-']: 'c',
      }
      let restarted: string | undefined
      const chat = await chatFrom('laptop', 'hop-to-hop', async (child) => {
        const route = JSON.parse((await child.waitFor(/^\{"route".*$/m, 120_000))[0]) as { route: string[] }
        await child.waitFor(/^\{"token":\d+,"index":6,/m, 120_000)
        restarted = route.route[1]
        const home = homeOf[restarted ?? '-']
        if (home === undefined) throw new Error(`the route's second hop ${restarted} is neither home B's nor C's`)
        await restartRouter(net, home, 6_000)
      })
      expect(chat.tokens).toEqual(oracle)
      expect(chat.failovers.map((f) => f.hostId)).toEqual([restarted])
      expect(chat.route.map((h) => h.hostId)).not.toContain(restarted)
    }, 420_000)
  },
)

/** Whether ICE connects a computer in home A with one in home B (ice-pairs.test.ts measured it). */
const ICE_PAIR_AB = false
