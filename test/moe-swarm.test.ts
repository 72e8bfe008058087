// A Q4_K_M mixture-of-experts model in the swarm, end to end on loopback: packed, published (with its
// known-answer probes), fetched over BitTorrent by two hosts on an uneven split, probed, routed, and
// chatted with over its default f32 seams: the streamed greedy tokens equal node-llama-cpp's on the whole file.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { generateModel } from '../gguf/generate'
import { readGguf } from '../gguf/reader'
import type { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { quantizeRows } from '../native/quantize'
import { scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const SHAPE = {
  arch: 'qwen3moe',
  blocks: 5,
  embd: 256,
  heads: 4,
  kvHeads: 2,
  ff: 512,
  vocab: 384,
  experts: 8,
  expertsUsed: 2,
  expertFf: 256,
  seed: 3,
} as const
const PROMPT = [1, 17, 42, 99, 7, 64, 300]
const TOKENS = 32

describe('a Q4_K_M qwen3moe model served by two hosts on an uneven split', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  let oracle: number[] = []
  beforeAll(async () => {
    scratch = await scratchDir('neuron-moe-swarm-')
    const model = join(scratch.dir, 'qwen3moe-q4_K_M.gguf')
    await generateModel({ ...SHAPE, type: 'q4_K_M', out: model, quantize: quantizeRows })
    const llama = await oracleModel(model)
    oracle = (await oracleGreedy(llama, PROMPT, TOKENS, SHAPE.vocab)).map((s) => s.token)
    await llama.dispose()
    swarm = await startSwarm(scratch.dir, model, [
      [0, 1],
      [1, 5],
    ])
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await scratch?.cleanup()
  })

  it('packs with its K-quant tensors, routes [0, 1) → [1, 5) and chats with llama.cpp’s greedy tokens', async () => {
    expect(swarm.manifest.architecture).toBe('qwen3moe')
    // a mixture of experts crosses its seams in f32 by default: f16 rounding flips a random router's choices
    expect(swarm.manifest.seamDtype).toBe('f32')
    // what the hosts fetched are K-quant blocks: the experts' weights in Q4_K (and Q6_K where Q4_K_M spends more bits)
    const types = new Set<string>()
    for (const a of swarm.manifest.artifacts.filter((a) => a.role === 'blocks')) {
      for (const t of (await readGguf(join(scratch.dir, 'packed', a.file))).tensors)
        if (t.name.includes('_exps')) types.add(t.type.name)
    }
    expect([...types].sort()).toEqual(['Q4_K', 'Q6_K'])
    for (const host of swarm.hosts)
      expect(swarm.tracker.checks.of((host as Host).hostId).probesPassed).toBeGreaterThanOrEqual(1)
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const tokens: number[] = []
      let blocks: (readonly [number, number])[] = []
      const run = client.generate({
        modelId: swarm.manifest.modelId,
        prompt: PROMPT,
        maxTokens: TOKENS,
        stopAtEog: false,
        onRoute: (hops) => (blocks = hops.map((h) => h.blocks)),
      })
      for (let next = await run.next(); !next.done; next = await run.next()) tokens.push(next.value.token)
      expect(blocks).toEqual([
        [0, 1],
        [1, 5],
      ])
      expect(tokens).toEqual(oracle)
    } finally {
      client.close()
    }
  }, 120_000)
})
