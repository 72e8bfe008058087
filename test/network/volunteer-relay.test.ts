// A volunteer relay across a network: the tracker in the cloud, a host on the laptop side started with
// --relay-for-others, and a host in home A behind a NAT with no port mapping, which no dial-back reaches.
// Every program is a real `neuron` process in its namespace.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { oracleGreedy, oracleModel } from '../../native/oracle'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../models'
import type { NeuronProcess } from '../processes'
import { buildHomeNetwork, type HomeNetwork, type Place, whyNoNamespaces } from '.'
import { neuronIn as startNeuronIn, swarmChildIn } from './programs'

const TOKENS = 32
const PORT = 7070
const why = whyNoNamespaces()

interface HostRow {
  hostId: string
  endpoint: string | null
  relayedBytes?: number
  relayOffer?: { reserved: { hostId: string; roundTripMs: number | null }[] }
}

let net: HomeNetwork
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let trackerUrl = ''
let prompt: number[] = []
let oracle: number[] = []
const hostIds: Partial<Record<Place, string>> = {}
const processes: NeuronProcess[] = []

const started = (p: NeuronProcess) => {
  processes.push(p)
  return p
}
const neuronIn = (place: Place, args: string[]) => started(startNeuronIn(net, place, args))
// the relays themselves under test: no channel punched around them
const childIn = (place: Place, args: string[]) => started(swarmChildIn(net, place, args, false))

async function startHost(place: Place, blocks: string, extra: string[] = []): Promise<void> {
  const args = [
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
  ]
  const host = neuronIn(place, [...args, ...extra])
  hostIds[place] = (await host.waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1]
}

async function hosts(): Promise<HostRow[]> {
  const line = (await childIn('laptop', ['hosts', trackerUrl]).waitFor(/^\{"hosts".*$/m, 60_000))[0]
  return (JSON.parse(line) as { hosts: HostRow[] }).hosts
}

describe.skipIf(why !== undefined)(
  `a volunteer relay on the internet side for a host behind NAT${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir('neuron-vrelay-'))
      net = await buildHomeNetwork({ links: { a: { delayMs: 5 } } })
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
      const model = await oracleModel(STORIES_260K)
      prompt = [...model.tokenize('Once upon a time', true)]
      oracle = (await oracleGreedy(model, prompt, TOKENS, manifest.nVocab)).map((s) => s.token)
      await model.dispose()
      const tracker = neuronIn('cloud', [
        'tracker',
        '--host',
        '0.0.0.0',
        '--port',
        String(PORT),
        '--db',
        join(dir, 'tracker.sqlite'),
        '--new-key-grant-micro',
        '10000000',
      ])
      await tracker.waitFor(/tracker listening on/, 60_000)
      trackerUrl = `http://${net.addresses.cloud}:${PORT}`
      const publisher = neuronIn('laptop', [
        'publish',
        join(dir, 'packed'),
        '--tracker',
        trackerUrl,
        '--data-dir',
        join(dir, 'publisher'),
      ])
      await publisher.waitFor(/published stories260k/, 120_000)
    }, 300_000)

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await net?.close()
      await cleanup()
    })

    it('home A’s host (NAT, no mapping) is reached through the laptop’s volunteer relay: llama.cpp’s greedy ' +
      'tokens, nothing through the tracker', async () => {
      await startHost('laptop', '0:2', ['--relay-for-others', '--relay-circuits', '4', '--relay-mbit', '50'])
      await startHost('hostA', '2:5')
      const deadline = Date.now() + 60_000
      let rows = await hosts()
      while (
        !rows.find((h) => h.hostId === hostIds.laptop)?.relayOffer?.reserved.some((r) => r.hostId === hostIds.hostA)
      ) {
        if (Date.now() > deadline)
          throw new Error(`home A never reserved at the laptop's relay: ${JSON.stringify(rows)}`)
        await new Promise((r) => setTimeout(r, 1000))
        rows = await hosts()
      }
      expect(rows.find((h) => h.hostId === hostIds.hostA)?.endpoint).toBeNull()
      const chat = childIn('laptop', ['chat', trackerUrl, manifest.modelId, String(TOKENS), prompt.join(',')])
      const done = (
        JSON.parse((await chat.waitFor(/^\{"done".*$/m, 180_000))[0]) as {
          done: { tokens: number[]; route: { hostId: string }[] }
        }
      ).done
      expect(done.tokens).toEqual(oracle)
      expect(done.route.map((h) => h.hostId)).toEqual([hostIds.laptop, hostIds.hostA])
      rows = await hosts()
      expect(rows.find((h) => h.hostId === hostIds.hostA)?.relayedBytes).toBe(0)
      const reserved = rows
        .find((h) => h.hostId === hostIds.laptop)
        ?.relayOffer?.reserved.find((r) => r.hostId === hostIds.hostA)
      console.log(JSON.stringify({ relayToHomeARoundTripMs: reserved?.roundTripMs }))
    }, 400_000)
  },
)
