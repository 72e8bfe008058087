// The swarm across a network, not loopback: the tracker in a cloud namespace, hosts in three homes behind
// NAT routers (test/network), chats from a laptop on the internet and from a computer inside a home. Every
// program is a real `neuron` process in its namespace; the hosts offer what they find (no flags).
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { oracleGreedy, oracleModel } from '../../native/oracle'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../models'
import type { NeuronProcess } from '../processes'
import { buildHomeNetwork, type HomeNetwork, type Place, whyNoMiniupnpd, whyNoNamespaces } from '.'
import { neuronIn as startNeuronIn, swarmChildIn } from './programs'

const TOKENS = 48
const PORT = 7070
const why = whyNoNamespaces() ?? whyNoMiniupnpd()

interface HostRow {
  hostId: string
  online: boolean
  blocks: [number, number] | null
  endpoint: string | null
  relayedBytes?: number
}
interface ChatDone {
  tokens: number[]
  route: { hostId: string; blocks: [number, number] }[]
  failovers: { hostId: string; blocks: [number, number]; recoveryMs: number }[]
}

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
let tracker: NeuronProcess | undefined

/** Runs a step of a test; when it fails, the error carries the last lines the tracker and the hosts printed. */
async function withLogs<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    // the last 40 lines, a line repeated in a row said once with its count (a refusal asked again fills a tail)
    const tail = (name: string, p: NeuronProcess | undefined) => {
      const lines: string[] = []
      let last = ''
      let repeats = 0
      for (const line of [...(p?.output() ?? '').split('\n'), '']) {
        if (line === last) {
          repeats++
          continue
        }
        if (repeats > 0) lines.push(`  (the line above ${repeats} more times)`)
        lines.push(line)
        last = line
        repeats = 0
      }
      return `--- ${name} ---\n${lines.slice(-80).join('\n')}`
    }
    const logs = [
      tail('tracker', tracker),
      ...Object.entries(hostProcesses).map(([place, p]) => tail(`${place} (${hostIds[place as Place]})`, p)),
    ]
    const rows = await hosts().catch((e: Error) => `hosts.list failed: ${e.message}`)
    if (error instanceof Error) error.message += `\n${logs.join('\n')}\n--- hosts.list ---\n${JSON.stringify(rows)}`
    throw error
  }
}

function neuronIn(place: Place, args: string[]): NeuronProcess {
  const p = startNeuronIn(net, place, args)
  processes.push(p)
  return p
}

function childIn(place: Place, args: string[]): NeuronProcess {
  // the relays under test (hole punching: ice-pairs.test.ts, punched-path.test.ts)
  const p = swarmChildIn(net, place, args, false)
  processes.push(p)
  return p
}

async function startHost(place: Place, blocks: string): Promise<NeuronProcess> {
  const host = neuronIn(place, [
    'host',
    '--tracker',
    trackerUrl,
    '--model',
    manifest.modelId,
    '--blocks',
    blocks,
    '--data-dir',
    join(dir, place),
    '--threads',
    '1',
  ])
  hostProcesses[place] = host
  hostIds[place] = (await host.waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1]
  return host
}

async function hosts(): Promise<HostRow[]> {
  const child = childIn('laptop', ['hosts', trackerUrl])
  const line = (await child.waitFor(/^\{"hosts".*$/m, 60_000))[0]
  return (JSON.parse(line) as { hosts: HostRow[] }).hosts
}

function hostRow(rows: HostRow[], place: Place): HostRow {
  const row = rows.find((h) => h.hostId === hostIds[place])
  if (row === undefined) throw new Error(`the tracker lists no host of ${place} (${hostIds[place]})`)
  return row
}

/** Polls hosts.list until `check` holds (the tracker dials a host back as its state changes). */
async function untilHosts(check: (rows: HostRow[]) => boolean, what: string, timeoutMs = 60_000): Promise<HostRow[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const rows = await hosts()
    if (check(rows)) return rows
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms: ${JSON.stringify(rows)}`)
    await new Promise((r) => setTimeout(r, 1000))
  }
}

/** A greedy chat from `place`; `longestGapMs`: the longest wait between two of its tokens, by the client's clock. */
function chatFrom(place: Place, onToken?: (index: number) => void): Promise<ChatDone & { longestGapMs: number }> {
  const child = childIn(place, ['chat', trackerUrl, manifest.modelId, String(TOKENS), prompt.join(',')])
  let seen = 0
  child.child.stdout?.on('data', () => {
    const count = (child.output().match(/^\{"token"/gm) ?? []).length
    for (; seen < count; seen++) onToken?.(seen + 1)
  })
  return child.waitFor(/^\{"done".*$/m, 180_000).then((m) => {
    const atMs = [...child.output().matchAll(/^\{"token".*"atMs":(\d+)\}$/gm)].map((t) => Number(t[1]))
    return {
      ...(JSON.parse(m[0]) as { done: ChatDone }).done,
      longestGapMs: Math.max(...atMs.slice(1).map((t, i) => t - (atMs[i] ?? 0))),
    }
  })
}

describe.skipIf(why !== undefined)(
  `a swarm across three homes behind NAT routers${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir('neuron-homes-'))
      // a few ms each way on every home link: far from loopback, and a generation long enough to cut in the middle
      net = await buildHomeNetwork({ links: { a: { delayMs: 5 }, b: { delayMs: 5 }, c: { delayMs: 5 } } })
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
      const model = await oracleModel(STORIES_260K)
      prompt = [...model.tokenize('Once upon a time', true)]
      oracle = (await oracleGreedy(model, prompt, TOKENS, manifest.nVocab)).map((s) => s.token)
      await model.dispose()
      tracker = neuronIn('cloud', [
        'tracker',
        ...['--host', '0.0.0.0', '--port', String(PORT), '--db', join(dir, 'tracker.sqlite')],
        ...['--heartbeat-ms', '500', '--new-key-grant-micro', '10000000', '--log-routes'],
        // out of probation at the first probe: which of homes B and C
        // is routed must not hang on when each passed its next ones
        ...['--probation-probes', '1'],
      ])
      await tracker.waitFor(/tracker listening on/, 60_000)
      trackerUrl = `http://${net.addresses.cloud}:${PORT}`
    }, 300_000)

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await net?.close()
      await cleanup()
    })

    it('hosts fetch their artifacts over BitTorrent across the NATs: the second host of a span fetches from the ' +
      'first, the publisher gone', async () => {
      const publisher = neuronIn('laptop', [
        'publish',
        join(dir, 'packed'),
        '--tracker',
        trackerUrl,
        '--data-dir',
        join(dir, 'publisher'),
      ])
      await publisher.waitFor(/published stories260k/, 120_000)
      // home C's router maps ports (miniupnpd): its host seeds to the others once the publisher is gone
      await Promise.all([startHost('hostC', '2:5'), startHost('hostA', '0:2')])
      await publisher.stop()
      await startHost('hostB', '2:5')
      expect((await readdir(join(dir, 'hostB', 'models', manifest.modelId))).sort()).toEqual([
        'blocks-2-4.gguf',
        'blocks-4-5.gguf',
        'head.gguf',
      ])
      expect((await readdir(join(dir, 'hostA', 'models', manifest.modelId))).sort()).toEqual([
        'blocks-0-2.gguf',
        'embed.gguf',
      ])
    }, 600_000)

    it('the tracker proves each host by dialing it back: home C at the port its router mapped, homes A and B (no ' +
      'mapping) through the relay', async () => {
      const rows = await untilHosts((r) => hostRow(r, 'hostC').endpoint !== null, 'home C reachable at its mapped port')
      expect(hostRow(rows, 'hostC').endpoint).toMatch(
        new RegExp(`^wss://${net.addresses.routerC.replaceAll('.', '\\.')}:\\d+/$`),
      )
      expect(hostRow(rows, 'hostA').endpoint).toBeNull()
      expect(hostRow(rows, 'hostB').endpoint).toBeNull()
    }, 120_000)

    it('chats from the laptop and from a computer inside home A give llama.cpp’s greedy tokens; the relay carries ' +
      'home A and nothing of home C', async () => {
      const [fromLaptop, fromHome] = [await chatFrom('laptop'), await chatFrom('peerA')]
      expect(fromLaptop.tokens).toEqual(oracle)
      expect(fromHome.tokens).toEqual(oracle)
      expect(fromLaptop.route.map((h) => h.hostId)).toEqual([hostIds.hostA, hostIds.hostC])
      const rows = await hosts()
      expect(hostRow(rows, 'hostC').relayedBytes).toBe(0)
      expect(hostRow(rows, 'hostA').relayedBytes).toBeGreaterThan(0)
    }, 300_000)

    it('home C’s router restarts (miniupnpd: every mapping gone): the host maps its port again, and the laptop ' +
      'reaches it directly again', async () => {
      await withLogs(async () => {
        await net.restartUpnp()
        // the host asks its router again every 15 s (PortMapping);
        // the tracker's proof of the endpoint still holds once it has
        await new Promise((r) => setTimeout(r, 20_000))
        // and home C is listed at its mapped port (a host whose tracker
        // connection the restart broke joins and is proven again)
        await untilHosts(
          (r) => hostRow(r, 'hostC').online && hostRow(r, 'hostC').endpoint !== null,
          'home C listed at its mapped port again',
        )
        const done = await chatFrom('laptop')
        expect(done.tokens).toEqual(oracle)
        expect(done.failovers).toEqual([])
        expect(done.route.map((h) => h.hostId)).toEqual([hostIds.hostA, hostIds.hostC])
      })
    }, 180_000)

    it('a host’s address changes (a new DHCP lease): it joins the tracker again from the new address, is dialed ' +
      'back again, and serves', async () => {
      const host = hostProcesses.hostA
      if (host === undefined) throw new Error('home A runs no host')
      await withLogs(async () => {
        const before = host.output().length
        await net.changeAddress('hostA')
        const deadline = Date.now() + 60_000
        while (!/addresses changed[\s\S]*joined /.test(host.output().slice(before))) {
          if (Date.now() > deadline)
            throw new Error(`host A did not join again after its address changed:\n${host.output().slice(before)}`)
          await new Promise((r) => setTimeout(r, 250))
        }
        // the tracker lists it serving again once it has dialed its new candidates back (none answers: relayed)
        await untilHosts(
          (r) => hostRow(r, 'hostA').online && hostRow(r, 'hostA').blocks?.join() === '0,2',
          'home A listed as serving again',
        )
        // a host that joined again is routed once the tracker's checks take it back: a probe begun before the change
        // runs out its 30 s through the relay, then one gets through (CI saw no_route here): a chat refused with
        // no_route meanwhile is asked again, for up to 90 s
        const routedBy = Date.now() + 90_000
        let done: Awaited<ReturnType<typeof chatFrom>> | undefined
        while (done === undefined) {
          done = await chatFrom('laptop').catch((error: Error) => {
            if (!/no_route/.test(error.message) || Date.now() > routedBy) throw error
            return undefined
          })
          if (done === undefined) await new Promise((r) => setTimeout(r, 1000))
        }
        expect(done.tokens).toEqual(oracle)
        expect(done.failovers).toEqual([])
        expect(done.route.map((h) => h.hostId)).toEqual([hostIds.hostA, hostIds.hostC])
      })
    }, 300_000)

    it('home C’s link cut mid-generation (the router’s link down, no process killed): the chat fails over to home ' +
      'B and keeps the same tokens', async () => {
      // a longer round trip to home C, so the generation is still running when the link goes down
      await net.setLink('c', { delayMs: 25 })
      let cut = false
      const done = await withLogs(() =>
        chatFrom('laptop', (index) => {
          if (index !== 12 || cut) return
          cut = true
          void net.cutLink('c')
        }),
      )
      try {
        expect(done.tokens).toEqual(oracle)
        expect(done.failovers.map((f) => f.hostId)).toEqual([hostIds.hostC])
        expect(done.route.map((h) => h.hostId)).toEqual([hostIds.hostA, hostIds.hostB])
        // noticed by the hop link's pings (LINK_SILENCE_MS), not by the step's 120 s timeout
        console.log(
          `link cut: the chat waited ${done.longestGapMs} ms for its next token (failover ` +
            `${Math.round(done.failovers[0]?.recoveryMs ?? 0)} ms of it)`,
        )
        expect(done.longestGapMs).toBeLessThan(60_000)
      } finally {
        await net.restoreLink('c')
        await net.setLink('c', { delayMs: 5 })
      }
    }, 300_000)
  },
)
