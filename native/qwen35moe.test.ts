// qwen35moe (Qwen3.5-MoE) against node-llama-cpp: delta-net blocks with a fixed-size recurrent state and
// full-attention blocks with gated output and M-RoPE, routed + gated shared experts. A generated model
// greedy through every split (f32 seams: identical tokens, probabilities within 1e-5; f16 seams reported),
// replay from position 0 equal to a fresh run, rollback refused with a typed error, the state's size.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { greedyInChild } from '../test/greedy'
import { scratchDir } from '../test/models'
import { allSplits, generateThroughRoute, logitsOf, maxAbsDiff, RuntimePool } from '../test/native'
import { recurrentStateBytes, QWEN35_SHAPE as SHAPE, writeQwen35Moe } from '../test/qwen35moe-model'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

const STEPS = 32
const F16_STEPS = 64
const MAX_DP = 1e-5

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let path = ''
let prompt: number[] = []
let oracle: OracleStep[] = []

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-qwen35moe-'))
  path = join(dir, 'qwen35moe.gguf')
  await writeQwen35Moe(path)
  // a model llama.cpp rejects aborts its process: load it in a child first, then here for the probabilities
  const [child] = await greedyInChild([path], 8)
  const model = await oracleModel(path)
  prompt = model.tokenize('Once upon a time')
  oracle = await oracleGreedy(model, prompt, F16_STEPS, SHAPE.vocab)
  await model.dispose()
  expect(oracle.slice(0, 8).map((s) => s.token)).toEqual(child?.tokens)
}, 120_000)
afterAll(() => cleanup())

describe('qwen35moe: greedy parity with node-llama-cpp', () => {
  it('every split of its 4 blocks (delta-net and full attention on either side of a seam) gives llama.cpp’s ' +
    'tokens', async () => {
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      let worst = 0
      for (const split of allSplits(SHAPE.blocks)) {
        const route = await generateThroughRoute(pool, split, prompt, STEPS)
        expect(
          route.map((s) => s.token),
          JSON.stringify(split),
        ).toEqual(oracle.slice(0, STEPS).map((s) => s.token))
        worst = Math.max(worst, ...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
      }
      expect(worst).toBeLessThanOrEqual(MAX_DP)
      const split: [number, number][] = [
        [0, 1],
        [1, 3],
        [3, 4],
      ]
      const f16 = await generateThroughRoute(pool, split, prompt, F16_STEPS, 'f16')
      const agree = f16.filter((s, i) => s.token === (oracle[i] as OracleStep).token).length
      const first = f16.findIndex((s, i) => s.token !== (oracle[i] as OracleStep).token)
      const distinct = new Set(oracle.map((s) => s.token)).size
      const topP = oracle.reduce((sum, s) => sum + Math.max(...s.probs), 0) / oracle.length
      console.log(
        `qwen35moe f16: ${distinct} distinct tokens in ${F16_STEPS}, mean top p ${topP.toFixed(3)}; max |dp| ` +
          `${worst.toExponential(2)} over ${allSplits(SHAPE.blocks).length} splits (f32 seams); f16 seams: ` +
          `${agree}/${F16_STEPS} tokens agree, first difference at ${first < 0 ? 'none' : first}`,
      )
      expect(distinct).toBeGreaterThanOrEqual(8)
    } finally {
      await pool.dispose()
    }
  }, 300_000)
})

describe('qwen35moe: a long prompt', () => {
  it('a 150-token prefill (past the conv kernel and any 64-token chunk) then greedy decoding equal ' +
    'llama.cpp’s', async () => {
    const long = Array.from({ length: 150 }, (_, i) => 3 + ((i * 7919) % (SHAPE.vocab - 3)))
    const model = await oracleModel(path)
    const expected = await oracleGreedy(model, long, 8, SHAPE.vocab)
    await model.dispose()
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      for (const split of [
        [[0, 4]],
        [
          [0, 1],
          [1, 2],
          [2, 4],
        ],
      ] as [number, number][][]) {
        const route = await generateThroughRoute(pool, split, long, 8)
        expect(
          route.map((s) => s.token),
          JSON.stringify(split),
        ).toEqual(expected.map((s) => s.token))
        expect(
          Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (expected[i] as OracleStep).probs))),
        ).toBeLessThanOrEqual(MAX_DP)
      }
    } finally {
      await pool.dispose()
    }
  }, 120_000)
})

describe('qwen35moe: the recurrent state', () => {
  /** Prompt then `steps` greedy tokens through a two-hop route, returning the tokens and the last logits. */
  async function run(sessions: ShardSession[], input: number[], steps: number, start?: number) {
    const tokens: number[] = []
    let x: Int32Array | Float32Array | Uint16Array = Int32Array.from(input)
    let logits: Float32Array = new Float32Array()
    let first = true
    for (let step = 0; step <= steps; step++) {
      for (const s of sessions) {
        const out = await s.forward(x, first && start !== undefined ? { positions: start } : {})
        x = out.kind === 'logits' ? x : out.data
        if (out.kind === 'logits') logits = logitsOf(out)
      }
      first = false
      if (step === steps) break
      const token = (sessions[sessions.length - 1] as ShardSession).sample({ temperature: 0 }).token
      tokens.push(token)
      x = Int32Array.of(token)
    }
    return { tokens, logits }
  }

  it('a replay from position 0 after other work gives exactly a fresh session’s logits and tokens', async () => {
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      const open = async () => [
        (await pool.get([0, 2])).openSession({ maxTokens: 128 }),
        (await pool.get([2, 4])).openSession({ maxTokens: 128 }),
      ]
      const fresh = await open()
      const expected = await run(fresh, prompt, 12)
      const reused = await open()
      await run(reused, [...prompt].reverse(), 20) // some other history in the state
      const replayed = await run(reused, prompt, 12, 0)
      expect(replayed.tokens).toEqual(expected.tokens)
      expect(Array.from(replayed.logits)).toEqual(Array.from(expected.logits))
      // truncate(0) and go on from 0: the same again
      for (const s of reused) s.truncate(0)
      expect(await run(reused, prompt, 12)).toEqual(replayed)
      for (const s of [...fresh, ...reused]) s.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('refuses to roll back a delta-net block with RECURRENT_ROLLBACK; blocks of full attention only may', async () => {
    const runtime = await ShardRuntime.load({
      artifacts: [path],
      blocks: [0, 4],
      embed: true,
      head: true,
      threads: 1,
      device: 'cpu',
    })
    try {
      const session = runtime.openSession({ maxTokens: 64 })
      await session.forward(Int32Array.from(prompt))
      await session.forward(Int32Array.of(5, 6, 7))
      const n = session.nPast
      await expect(session.forward(Int32Array.of(9), { positions: n - 1 })).rejects.toMatchObject({
        code: 'RECURRENT_ROLLBACK',
        details: { position: n - 1, nPast: n },
        message: expect.stringMatching(/replay the session from position 0/),
      })
      const refused = (() => {
        try {
          session.truncate(n - 2)
        } catch (err) {
          return err
        }
      })()
      expect(refused).toMatchObject({ code: 'RECURRENT_ROLLBACK', details: { to: n - 2, nPast: n } })
      // still serving where it was
      expect(session.nPast).toBe(n)
      expect((await session.forward(Int32Array.of(9))).kind).toBe('logits')
      session.close()

      // block 1 attends to everything: a session of it alone keeps only K and V, which roll back
      const attention = runtime.openSession({ maxTokens: 64, blocks: [1, 2] })
      const hidden = new Float32Array(4 * SHAPE.embd).fill(0.1)
      await attention.forward(hidden)
      await attention.forward(hidden.subarray(0, SHAPE.embd), { positions: 2 })
      expect(attention.nPast).toBe(3)
      attention.truncate(1)
      attention.close()
    } finally {
      runtime.dispose()
    }
  }, 60_000)

  it(
    'a delta-net block keeps a fixed state whatever maxTokens is; a full-attention block keeps K and V per ' +
      'position',
    async () => {
      const runtime = await ShardRuntime.load({
        artifacts: [path],
        blocks: [0, 4],
        embed: true,
        head: true,
        threads: 1,
        device: 'cpu',
      })
      try {
        const perBlock = (maxTokens: number) => {
          const s = runtime.openSession({ maxTokens })
          const bytes = s.kvBytesPerBlock
          s.close()
          return bytes
        }
        const state = recurrentStateBytes(SHAPE)
        const kv = (cells: number) => 2 * 2 * SHAPE.kvHeads * SHAPE.headDim * cells // f16 K and V
        expect(perBlock(256)).toEqual([state, kv(256), state, kv(256)])
        expect(perBlock(1024)).toEqual([state, kv(1024), state, kv(1024)])
      } finally {
        runtime.dispose()
      }
    },
  )
})

describe('qwen35moe: hostile metadata is refused with a typed error', () => {
  it(
    'a full_attention_interval of 0, key heads that do not divide value heads, a state that does not fit ' +
      'its heads',
    async () => {
      const load = (file: string) =>
        ShardRuntime.load({ artifacts: [file], blocks: [0, 4], embed: true, head: true, threads: 1, device: 'cpu' })
      const bad = async (key: string, value: number) => {
        const file = join(dir, `hostile-${key}-${value}.gguf`)
        await writeQwen35Moe(file, SHAPE, { [`qwen35moe.${key}`]: value })
        return load(file)
      }
      await expect(bad('full_attention_interval', 0)).rejects.toMatchObject({ code: 'BAD_METADATA' })
      await expect(bad('ssm.group_count', 3)).rejects.toMatchObject({ code: 'BAD_METADATA' })
      await expect(bad('ssm.inner_size', 100)).rejects.toMatchObject({ code: 'BAD_METADATA' })
      await expect(bad('ssm.conv_kernel', 1)).rejects.toMatchObject({ code: 'BAD_METADATA' })
      await expect(bad('ssm.state_size', 8)).rejects.toMatchObject({ code: 'BAD_METADATA' })
      await expect(bad('expert_shared_feed_forward_length', 32)).rejects.toMatchObject({ code: 'BAD_TENSOR' })
      const runtime = await load(path)
      const session = runtime.openSession({ maxTokens: 16 })
      expect((await session.forward(Int32Array.of(1, 2, 3))).kind).toBe('logits')
      session.close()
      runtime.dispose()
    },
  )
})
