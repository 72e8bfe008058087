// The large targets' families in the swarm on loopback: a tracker, three hosts on an uneven split and a
// spare, for qwen35moe (Qwen3.5-MoE: delta-net blocks keep a fixed-size state per session that cannot be
// rolled back), glm-dsa (GLM-5.2: the top-k indices of the last full-indexer block cross the seams
// before shared-indexer blocks) and deepseek4 (DeepSeek-V4-Flash: four streams of the hidden state and,
// before hash-routed blocks, the token ids cross; compressor states cannot be rolled back). `neuron chat` prints
// node-llama-cpp's greedy text; when the middle hop stops mid-generation, the spare that takes its span rebuilds its
// state by replaying the session from position 0, and the tokens do not change.
import { join } from 'node:path'
import type { Token } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { type GenerateOptions, generateModel } from '../gguf/generate'
import type { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { type RouteHop, seamAt } from '../protocol'
import { LyingHost } from './lying-host'
import { scratchDir } from './models'
import { type NeuronProcess, startNeuron } from './processes'
import { type InProcessSwarm, startSwarm } from './programs'

const COMMON = {
  embd: 256,
  heads: 4,
  kvHeads: 2,
  ff: 256,
  vocab: 384,
  experts: 8,
  expertsUsed: 2,
  expertFf: 256,
  seed: 1,
  type: 'q8_0',
} as const

interface Family {
  readonly shape: Omit<GenerateOptions, 'out'>
  /** Three hops and a spare for the middle one. */
  readonly split: readonly (readonly [number, number])[]
  /** What the seams of the split carry, checked against the manifest (so the test runs what it says). */
  readonly seams: string
}

const FAMILIES: Record<string, Family> = {
  // blocks 0–2 delta-net, block 3 full attention (llama.cpp's interval of 4)
  qwen35moe: {
    shape: { ...COMMON, arch: 'qwen35moe', blocks: 4 },
    split: [
      [0, 1],
      [1, 3],
      [3, 4],
    ],
    seams: '256 values; 256 values',
  },
  // blocks 0 and 3 run the indexer, 1, 2 and 4 reuse its top-k: both cuts fall before shared blocks, so indices cross
  'glm-dsa': {
    shape: { ...COMMON, arch: 'glm-dsa', blocks: 5, fullIndexerInterval: 3, indexerTopK: 8 },
    split: [
      [0, 1],
      [1, 4],
      [4, 5],
    ],
    seams: '256 values + 8 indices; 256 values + 8 indices',
  },
  // four hyper-connection streams cross every cut; blocks 0 and 1 route experts by token id, so the ids cross cut 1;
  // blocks 1–3 keep compressed caches and a compressor state, which cannot be rolled back
  deepseek4: {
    shape: { ...COMMON, arch: 'deepseek4', blocks: 4, compressRatios: [0, 4, 128, 4], slidingWindow: 8, hashLayers: 2 },
    split: [
      [0, 1],
      [1, 3],
      [3, 4],
    ],
    seams: '1024 values + token ids; 1024 values',
  },
}
const PROMPT = 'Once upon a time'
const TOKENS = 32
const STOP_AFTER = 12

describe.each(Object.entries(FAMILIES))('%s in the swarm: neuron chat and a failover', (arch, family) => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  let prompt: number[] = []
  let oracle: number[] = []
  let oracleText = ''
  const processes: NeuronProcess[] = []
  beforeAll(async () => {
    scratch = await scratchDir(`neuron-${arch}-swarm-`)
    const model = join(scratch.dir, `${arch}.gguf`)
    await generateModel({ ...family.shape, out: model })
    const llama = await oracleModel(model)
    // as the client tokenizes a prompt: with the BOS token where the model wants one
    const bos = llama.tokens.bos
    prompt = [...(bos !== null && llama.tokens.shouldPrependBosToken ? [bos] : []), ...llama.tokenize(PROMPT)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, COMMON.vocab)).map((s) => s.token)
    oracleText = llama.detokenize(oracle.slice(0, 16) as Token[], false, prompt as Token[])
    await llama.dispose()
    const [first, middle, last] = family.split as [[number, number], [number, number], [number, number]]
    swarm = await startSwarm(scratch.dir, model, [first, middle, last, middle])
  }, 240_000)
  afterAll(async () => {
    for (const p of processes) await p.stop(2000)
    await swarm?.close()
    await scratch?.cleanup()
  })

  it(
    'the manifest states what crosses each cut of the split, ' + 'and every host passed a known-answer probe across it',
    () => {
      const carried = family.split.slice(1).map(([b]) => {
        const seam = seamAt(swarm.manifest, b)
        const indices = seam.int32PerToken > 0 ? ` + ${seam.int32PerToken} indices` : ''
        return `${seam.values} values${seam.tokenIds ? ' + token ids' : ''}${indices}`
      })
      expect(carried.join('; ')).toBe(family.seams)
      // the publisher's known-answer probes cross the same seams: every host passed one before it was routed
      for (const host of swarm.hosts)
        expect(swarm.tracker.checks.of((host as Host).hostId)).toMatchObject({ probesFailed: 0, ban: null })
      for (const host of swarm.hosts)
        expect(swarm.tracker.checks.of((host as Host).hostId).probesPassed).toBeGreaterThanOrEqual(1)
    },
  )

  it('neuron chat prints llama.cpp’s greedy text through three hosts', async () => {
    const chat = startNeuron([
      'chat',
      '--tracker',
      swarm.tracker.url,
      '--model',
      swarm.manifest.modelId,
      '--max-tokens',
      '16',
      '--data-dir',
      join(scratch.dir, 'chat'),
      PROMPT,
    ])
    processes.push(chat)
    await chat.waitFor(/16 tokens \(length\), [\d.]+ tokens\/s/, 120_000)
    // the CLI starts the completion at its first visible character, and holds back a trailing partial UTF-8 character
    expect(chat.output()).toContain(oracleText.trimStart().replace(/\ufffd+$/, ''))
    for (const [from, to] of family.split)
      expect(chat.output()).toMatch(new RegExp(`hop [0-9a-f]{20} blocks \\[${from}, ${to}\\)`))
  }, 150_000)

  // GLM-DSA only: the indices a hop passes on steer the next hop's attention, and values alone would not show a lie
  if (arch === 'glm-dsa')
    it('a host that computes honestly but passes on other top-k indices fails its known-answer probe and is never ' +
      'routed', async () => {
      const liar = swarm.addHost(
        family.split[1] as [number, number],
        (options) => new LyingHost(options, { lie: { kind: 'indices' } }),
      )
      await expect(liar).rejects.toMatchObject({ code: 'banned' })
      const id = (swarm.hosts.at(-1) as Host).hostId
      expect(swarm.tracker.checks.of(id).ban?.reason).toMatch(
        /passed on other token ids or indices than the reference's/,
      )
    }, 120_000)

  it('a middle hop stopped mid-generation is replaced and replayed from 0: tokens unchanged', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const middle = family.split[1] as readonly [number, number]
    try {
      let route: readonly RouteHop[] = []
      let stopped = ''
      const tokens: number[] = []
      const run = client.generate({
        modelId: swarm.manifest.modelId,
        prompt,
        maxTokens: TOKENS,
        stopAtEog: false,
        onRoute: (hops) => (route = hops),
      })
      let next = await run.next()
      for (; !next.done; next = await run.next()) {
        tokens.push(next.value.token)
        if (tokens.length === STOP_AFTER) {
          stopped = route.find((h) => h.blocks[0] === middle[0])?.hostId ?? ''
          await (swarm.hosts.find((h) => (h as Host).hostId === stopped) as Host).stop(0)
        }
      }
      expect(next.value.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[stopped, [...middle]]])
      expect(route.map((h) => h.blocks)).toEqual(family.split.map((r) => [...r]))
      expect(stopped).not.toBe('')
      expect(route.find((h) => h.blocks[0] === middle[0])?.hostId).not.toBe(stopped)
      expect(tokens).toEqual(oracle)
    } finally {
      client.close()
    }
  }, 120_000)
})
