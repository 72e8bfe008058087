// The swarm end to end with real processes on loopback: a tracker, a publisher, hosts that fetch
// only their artifacts over BitTorrent, and a client whose greedy completion must equal llama.cpp's.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { LlamaModel } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import type { Manifest, RouteHop } from '../protocol'
import { generateAll } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { ProcessSwarm } from './processes'

const TOKENS = 64
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: ProcessSwarm
let trackerUrl = ''
let manifest: Manifest
let oracle: number[] = []
let promptTokens: number[] = []

function generate(client: SwarmClient, onToken?: (n: number, route: readonly RouteHop[]) => void) {
  return generateAll(
    client,
    { modelId: manifest.modelId, prompt: promptTokens, maxTokens: TOKENS, stopAtEog: false },
    onToken,
  )
}

describe(`swarm of real processes on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    swarm = await ProcessSwarm.start(dir, manifest.modelId)
    trackerUrl = swarm.trackerUrl
    const model: LlamaModel = await oracleModel(STORIES_260K)
    promptTokens = [...model.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(model, promptTokens, TOKENS, manifest.nVocab)).map((s) => s.token)
    await model.dispose()
  }, 180_000)
  afterAll(async () => {
    await swarm?.stop()
    await cleanup()
  })

  it('three hosts fetch only their own artifacts, and the streamed greedy completion equals llama.cpp’s', async () => {
    await Promise.all([
      swarm.startHost('host-a', '0:2'),
      swarm.startHost('host-b', '2:4'),
      swarm.startHost('host-c', '4:5'),
    ])
    const expectFiles = {
      'host-a': ['blocks-0-2.gguf', 'embed.gguf'],
      'host-b': ['blocks-2-4.gguf'],
      'host-c': ['blocks-4-5.gguf', 'head.gguf'],
    }
    for (const [name, files] of Object.entries(expectFiles))
      expect((await readdir(join(dir, name, 'models', manifest.modelId))).sort()).toEqual(files)

    const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
    try {
      const { tokens, summary } = await generate(client)
      expect(tokens).toEqual(oracle)
      expect(summary.route.map((h) => h.blocks)).toEqual([
        [0, 2],
        [2, 4],
        [4, 5],
      ])
      console.log(
        `3-hop route: ${summary.decodeTokensPerSecond.toFixed(1)} tokens/s; per hop ` +
          `${summary.route.map((h) => `${h.medianMs.toFixed(2)} ms`).join(', ')}`,
      )
    } finally {
      client.close()
    }
  })

  it('neuron chat streams the same greedy text from the command line', async () => {
    const chat = swarm.start([
      'chat',
      '--tracker',
      trackerUrl,
      '--model',
      manifest.modelId,
      '--max-tokens',
      '16',
      '--data-dir',
      join(dir, 'chat'),
      'Once upon a time',
    ])
    await chat.waitFor(/16 tokens \(length\), [\d.]+ tokens\/s/)
    expect(chat.output()).toMatch(/^, there was a little girl named Lily/)
    expect(chat.output()).toMatch(/hop [0-9a-f]{20} blocks \[0, 2\)/)
  })

  it(
    'survives a host killed (SIGKILL) mid-generation: a spare takes its span and the completion still equals ' +
      'llama.cpp’s',
    async () => {
      const spare = await swarm.startHost('host-spare', '2:4')
      const hostB = swarm.processes.find((p) => / ready blocks \[2, 4\)/.test(p.output()) && p !== spare)
      const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
      try {
        let killed = ''
        const { tokens, summary } = await generate(client, (n, route) => {
          if (n !== 20 || killed !== '') return
          // Kill whichever [2, 4) host the route uses, between two steps.
          const onRoute = route.find((h) => h.blocks[0] === 2)?.hostId ?? ''
          const victim = [hostB, spare].find((p) => p?.output().includes(onRoute))
          killed = onRoute
          victim?.child.kill('SIGKILL')
        })
        expect(killed).not.toBe('')
        expect(tokens).toEqual(oracle)
        expect(summary.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[killed, [2, 4]]])
        console.log(`failover: host ${killed} replaced in ${summary.failovers[0]?.recoveryMs.toFixed(0)} ms`)
      } finally {
        client.close()
      }
    },
  )
})
