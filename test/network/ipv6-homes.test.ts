// Issue 39, IPv6: Neuron's own programs across the namespace network (test/network). A host in home D, whose router
// gives it a global IPv6 address behind a firewall that drops new inbound v6 (and maps no v4 port), is not reachable
// while the router offers no pinhole: the tracker's dial-back of its v6 candidate meets the firewall and the host is
// relayed. Once the router runs PCP (miniupnpd started), the host's next ask opens a pinhole, its offer changes, the
// tracker proves the v6 endpoint by dial-back, and the laptop chats straight to it: llama.cpp's greedy tokens, and the
// tracker relays no byte for it.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { oracleGreedy, oracleModel } from '../../native/oracle'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../models'
import type { NeuronProcess } from '../processes'
import { buildHomeNetwork, type HomeNetwork, whyNoMiniupnpd, whyNoNamespaces } from '.'
import { neuronIn, swarmChildIn } from './programs'

const TOKENS = 16
const PORT = 7070
const why = whyNoNamespaces() ?? whyNoMiniupnpd()

interface HostRow {
  hostId: string
  endpoint: string | null
  relayedBytes?: number
}

describe.skipIf(why !== undefined)(
  `a host reached over IPv6 through its router's pinhole${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    let dir = ''
    let cleanup: () => Promise<void> = async () => {}
    let manifest: Manifest
    let trackerUrl = ''
    let prompt: number[] = []
    let oracle: number[] = []
    let hostId = ''
    let host: NeuronProcess
    const processes: NeuronProcess[] = []
    const start = (place: Parameters<typeof neuronIn>[1], args: string[]) => {
      const p = neuronIn(net, place, args)
      processes.push(p)
      return p
    }

    async function row(): Promise<HostRow | undefined> {
      const child = swarmChildIn(net, 'laptop', ['hosts', trackerUrl])
      processes.push(child)
      const line = (await child.waitFor(/^\{"hosts".*$/m, 60_000))[0]
      return (JSON.parse(line) as { hosts: HostRow[] }).hosts.find((h) => h.hostId === hostId)
    }

    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir('neuron-ipv6-homes-'))
      net = await buildHomeNetwork({ links: { d: { delayMs: 5 } } })
      // the router offers no pinhole yet
      await net.stopUpnp('d')
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
      const publisher = start('laptop', ['publish', join(dir, 'packed'), '--tracker', trackerUrl, '--data-dir', dir])
      await publisher.waitFor(/published stories260k/, 120_000)
      host = start('hostD', [
        ...['host', '--tracker', trackerUrl, '--model', manifest.modelId, '--blocks', `0:${manifest.nLayer}`],
        ...['--data-dir', join(dir, 'hostD'), '--threads', '1'],
      ])
      hostId = (await host.waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1] ?? ''
      await publisher.stop()
    }, 600_000)

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await net?.close()
      await cleanup()
    })

    it('is relayed while its router opens no pinhole: the firewall drops the dial-back of its v6 address', async () => {
      expect(host.output()).toMatch(/data plane listening at wss:\/\/\[::\]:\d+\//)
      expect((await row())?.endpoint).toBeNull()
    }, 120_000)

    it("once the router runs PCP: a pinhole, the v6 endpoint proved by dial-back, and the laptop's chat goes " +
      "straight to it, llama.cpp's greedy tokens, no byte through the tracker", async () => {
      await net.restartUpnp('d')
      await host.waitFor(/the router's firewall lets the internet reach \[2001:db8:4::10\]:\d+/, 60_000)
      let endpoint: string | null | undefined = null
      for (let i = 0; i < 30 && endpoint == null; i++) {
        endpoint = (await row())?.endpoint
        if (endpoint == null) await new Promise((resolve) => setTimeout(resolve, 1_000))
      }
      expect(endpoint).toMatch(/^wss:\/\/\[2001:db8:4::10\]:\d+\/$/)
      const before = (await row())?.relayedBytes ?? Number.NaN
      const chat = swarmChildIn(
        net,
        'laptop',
        ['chat', trackerUrl, manifest.modelId, String(TOKENS), prompt.join(',')],
        false,
      )
      processes.push(chat)
      const done = JSON.parse((await chat.waitFor(/^\{"done".*$/m, 180_000))[0]) as {
        done: { tokens: number[]; route: Array<{ hostId: string; reached: string }> }
      }
      expect(done.done.tokens).toEqual(oracle)
      expect(done.done.route.map((h) => [h.hostId, h.reached])).toEqual([[hostId, 'direct']])
      expect((await row())?.relayedBytes ?? Number.NaN).toBe(before)
    }, 300_000)
  },
)
