// deepseek4 (DeepSeek-V4-Flash's architecture) against node-llama-cpp: four hyper-connection streams between
// blocks (a seam is 4 x n_embd per token), hash-routed experts on the first blocks (their token ids cross the
// seam), a sliding window of 8 on every block plus compressed keys every 4 positions (with the lightning
// indexer's top-k) or every 128. Generated models greedy through every split (f32 seams: identical tokens,
// probabilities within MAX_DP; f16 seams reported), prompts long enough for the 128x compressor and for the
// window ring's slices, bad seam input refused before compute, rollback refused except a replay from 0, the
// caches' bytes, hostile metadata.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { describeModel } from '../gguf/model'
import { readGguf } from '../gguf/reader'
import { blockCacheBytes } from '../protocol/cache-cost'
import { greedyInChild } from '../test/greedy'
import { scratchDir } from '../test/models'
import { allSplits, generateThroughRoute, logitsOf, maxAbsDiff, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { quantizeRows } from './quantize'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

const STEPS = 32
const F16_STEPS = 64
/** Largest |Δp| of any token at any step with f32 seams: measured ≤ 1.1e-6 (f16 and q8_0 weights, AVX2). */
const MAX_DP = 1e-5
const TYPES = ['f16', 'q8_0'] as const
// llama.cpp's deepseek4 needs at least one ratio-4 and one ratio-128 block, 4 streams, an indexer head of 64;
// blocks 0 and 1 route by token id, so a hop starting at block 1 needs the ids; 8 positions of window
const SHAPE = {
  arch: 'deepseek4',
  blocks: 4,
  embd: 256,
  heads: 4,
  kvHeads: 2,
  ff: 256,
  vocab: 384,
  seed: 1,
  compressRatios: [0, 4, 128, 4],
  slidingWindow: 8,
  hashLayers: 2,
} as const
const HC = 4

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let prompt: number[] = []
const paths: Record<string, string> = {}
const oracles: Record<string, OracleStep[]> = {}

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-deepseek4-'))
  for (const type of TYPES) {
    paths[type] = join(dir, `deepseek4-${type}.gguf`)
    await generateModel({ ...SHAPE, type, out: paths[type], quantize: quantizeRows })
  }
  // a model llama.cpp rejects aborts its process: load them in a child first, then here for the probabilities
  const children = await greedyInChild(Object.values(paths), 8)
  for (const [i, type] of TYPES.entries()) {
    const model = await oracleModel(paths[type] as string)
    prompt = model.tokenize('Once upon a time')
    oracles[type] = await oracleGreedy(model, prompt, F16_STEPS, SHAPE.vocab)
    await model.dispose()
    expect(oracles[type]?.slice(0, 8).map((s) => s.token)).toEqual(children[i]?.tokens)
  }
}, 120_000)
afterAll(() => cleanup())

describe('deepseek4: greedy parity with node-llama-cpp', () => {
  for (const type of TYPES) {
    it(`${type}: every split of its 4 blocks gives llama.cpp’s tokens (f32 seams); f16 seams reported`, async () => {
      const oracle = oracles[type] as OracleStep[]
      const pool = new RuntimePool(() => [paths[type] as string], SHAPE.blocks)
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
        // 64 tokens: the indexer picks 8 of up to 19 compressed keys; a seam before the hash-routed block 1
        const f16 = await generateThroughRoute(
          pool,
          [
            [0, 1],
            [1, 3],
            [3, 4],
          ],
          prompt,
          F16_STEPS,
          'f16',
        )
        const agree = f16.filter((s, i) => s.token === (oracle[i] as OracleStep).token).length
        const first = f16.findIndex((s, i) => s.token !== (oracle[i] as OracleStep).token)
        const distinct = new Set(oracle.map((s) => s.token)).size
        console.log(
          `deepseek4 ${type}: ${distinct} distinct tokens in ${F16_STEPS}; max |dp| ${worst.toExponential(2)} over ` +
            `${allSplits(SHAPE.blocks).length} splits (f32 seams); f16 seams: ${agree}/${F16_STEPS} tokens agree, ` +
            `first difference at ${first < 0 ? 'none' : first}`,
        )
        expect(distinct).toBeGreaterThanOrEqual(8)
      } finally {
        await pool.dispose()
      }
    }, 300_000)
  }

  it('another layout: indexer head 128 ≠ head 64 (attention keys unrotated), top-k 4, 4 output groups, ratio 4 at ' +
    'block 0', async () => {
    const path = join(dir, 'deepseek4-layout.gguf')
    const layout = {
      ...SHAPE,
      seed: 3,
      compressRatios: [4, 128, 0, 4],
      hashLayers: 1,
      indexerHeadSize: 128,
      indexerTopK: 4,
      outputGroups: 4,
    }
    await generateModel({ ...layout, type: 'f16', out: path, quantize: quantizeRows })
    await greedyInChild([path], 4)
    const model = await oracleModel(path)
    const oracle = await oracleGreedy(model, prompt, STEPS, SHAPE.vocab)
    await model.dispose()
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      for (const split of allSplits(SHAPE.blocks)) {
        const route = await generateThroughRoute(pool, split, prompt, STEPS)
        expect(
          route.map((s) => s.token),
          JSON.stringify(split),
        ).toEqual(oracle.map((s) => s.token))
        expect(
          Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs))),
        ).toBeLessThanOrEqual(MAX_DP)
      }
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('long prompts equal llama.cpp’s: 150 tokens (a 128x key, the indexer choosing among 37) and 1300 (two slices ' +
    'through the window’s ring)', async () => {
    const path = paths.q8_0 as string
    for (const length of [150, 1300]) {
      const long = Array.from({ length }, (_, i) => 3 + ((i * 7919) % (SHAPE.vocab - 3)))
      const model = await oracleModel(path)
      const expected = await oracleGreedy(model, long, 8, SHAPE.vocab, { contextSize: 2048 })
      await model.dispose()
      const pool = new RuntimePool(() => [path], SHAPE.blocks)
      try {
        for (const split of [
          [[0, 4]],
          [
            [0, 2],
            [2, 3],
            [3, 4],
          ],
        ] as [number, number][][]) {
          const route = await generateThroughRoute(pool, split, long, 8, 'f32', 2048)
          expect(
            route.map((s) => s.token),
            `${length} ${JSON.stringify(split)}`,
          ).toEqual(expected.map((s) => s.token))
          expect(
            Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (expected[i] as OracleStep).probs))),
          ).toBeLessThanOrEqual(MAX_DP)
        }
      } finally {
        await pool.dispose()
      }
    }
  }, 180_000)
})

describe('deepseek4: the seam', () => {
  it('states its widths and token ids per hop, and refuses bad seam input with a typed error before ' +
    'compute', async () => {
    const path = paths.q8_0 as string
    const load = (blocks: [number, number]) =>
      ShardRuntime.load({
        artifacts: [path],
        blocks,
        embed: blocks[0] === 0,
        head: blocks[1] === SHAPE.blocks,
        threads: 1,
        device: 'cpu',
      })
    const [first, second, third] = await Promise.all([load([0, 1]), load([1, 3]), load([3, 4])])
    try {
      const a = first.openSession({ maxTokens: 64 })
      const b = second.openSession({ maxTokens: 64 })
      const c = third.openSession({ maxTokens: 64 })
      expect([a.inputWidth, a.outputWidth, b.inputWidth, c.inputWidth]).toEqual([
        HC * SHAPE.embd,
        HC * SHAPE.embd,
        HC * SHAPE.embd,
        HC * SHAPE.embd,
      ])
      // block 1 routes by token id; block 3 does not; the first hop has the ids already
      expect([a.needsTokenIds, b.needsTokenIds, c.needsTokenIds]).toEqual([false, true, false])
      expect([a.indicesIn, a.indicesOut, b.indicesIn, c.indicesOut]).toEqual([0, 0, 0, 0])
      await expect(a.forward(Int32Array.from(prompt), { tokenIds: Int32Array.from(prompt) })).rejects.toMatchObject({
        code: 'TOKEN_IDS_UNEXPECTED',
      })
      const out = await a.forward(Int32Array.from(prompt))
      expect(out).toMatchObject({ kind: 'hidden', rows: prompt.length, cols: HC * SHAPE.embd })
      const hidden = out.data as Float32Array
      const ids = Int32Array.from(prompt)
      await expect(b.forward(hidden)).rejects.toMatchObject({
        code: 'TOKEN_IDS_SIZE',
        details: { got: 0, expected: prompt.length },
      })
      await expect(b.forward(hidden, { tokenIds: ids.subarray(1) })).rejects.toMatchObject({ code: 'TOKEN_IDS_SIZE' })
      await expect(
        b.forward(hidden, { tokenIds: Int32Array.from(prompt, (t, i) => (i === 3 ? SHAPE.vocab : t)) }),
      ).rejects.toMatchObject({
        code: 'TOKEN_OUT_OF_RANGE',
        details: { index: 3, token: SHAPE.vocab },
      })
      await expect(b.forward(hidden, { tokenIds: Int32Array.from(prompt, () => -1) })).rejects.toMatchObject({
        code: 'TOKEN_OUT_OF_RANGE',
      })
      // one stream's width (n_embd) per token is not a deepseek4 hidden state
      await expect(
        b.forward(hidden.subarray(0, prompt.length * SHAPE.embd + 1), { tokenIds: ids }),
      ).rejects.toMatchObject({ code: 'HIDDEN_SIZE' })
      await expect(b.forward(hidden, { tokenIds: ids, indices: new Int32Array(prompt.length) })).rejects.toMatchObject({
        code: 'BAD_INDICES',
      })
      await expect(c.forward(hidden, { tokenIds: ids })).rejects.toMatchObject({ code: 'TOKEN_IDS_UNEXPECTED' })
      // nothing was computed: both hops go on from position 0
      expect([b.nPast, c.nPast]).toEqual([0, 0])
      const mid = await b.forward(hidden, { tokenIds: ids })
      expect(mid).toMatchObject({ kind: 'hidden', cols: HC * SHAPE.embd })
      const logits = logitsOf(await c.forward(mid.data as Float32Array))
      expect(logits.length).toBe(SHAPE.vocab)
      for (const s of [a, b, c]) s.close()
    } finally {
      for (const rt of [first, second, third]) rt.dispose()
    }
  }, 60_000)
})

describe('deepseek4: the compressor state', () => {
  /** Prompt then `steps` greedy tokens through a route, returning the tokens and the last logits. */
  async function run(sessions: ShardSession[], input: number[], steps: number, start?: number) {
    const tokens: number[] = []
    let ids = Int32Array.from(input)
    let logits: Float32Array = new Float32Array()
    for (let step = 0; step <= steps; step++) {
      let x: Int32Array | Float32Array | Uint16Array = ids
      for (const s of sessions) {
        const out = await s.forward(x, {
          ...(step === 0 && start !== undefined ? { positions: start } : {}),
          ...(s.needsTokenIds ? { tokenIds: ids } : {}),
        })
        if (out.kind === 'logits') logits = logitsOf(out)
        else x = out.data
      }
      if (step === steps) break
      const token = (sessions[sessions.length - 1] as ShardSession).sample({ temperature: 0 }).token
      tokens.push(token)
      ids = Int32Array.of(token)
    }
    return { tokens, logits }
  }

  it('a replay from position 0 after other work gives exactly a fresh session’s logits and tokens', async () => {
    const pool = new RuntimePool(() => [paths.q8_0 as string], SHAPE.blocks)
    try {
      const open = async () => [
        (await pool.get([0, 2])).openSession({ maxTokens: 128 }),
        (await pool.get([2, 4])).openSession({ maxTokens: 128 }),
      ]
      const fresh = await open()
      const expected = await run(fresh, prompt, 20)
      const reused = await open()
      await run(reused, [...prompt].reverse(), 30) // other history in the compressors' state
      const replayed = await run(reused, prompt, 20, 0)
      expect(replayed.tokens).toEqual(expected.tokens)
      expect(Array.from(replayed.logits)).toEqual(Array.from(expected.logits))
      for (const s of reused) s.truncate(0)
      expect(await run(reused, prompt, 20)).toEqual(replayed)
      for (const s of [...fresh, ...reused]) s.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('refuses to roll back a compressing block with RECURRENT_ROLLBACK; a window-only block rolls back within ' +
    'its ring', async () => {
    const runtime = await ShardRuntime.load({
      artifacts: [paths.q8_0 as string],
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
        message: expect.stringMatching(/compressor state.*replay the session from position 0/),
      })
      expect(() => session.truncate(n - 2)).toThrow(
        expect.objectContaining({ code: 'RECURRENT_ROLLBACK', details: { to: n - 2, nPast: n } }),
      )
      expect(session.nPast).toBe(n)
      expect((await session.forward(Int32Array.of(9))).kind).toBe('logits')
      session.close()

      // block 0 keeps only its sliding window's keys (compress ratio 0): it rolls back like any window
      const window = runtime.openSession({ maxTokens: 64, blocks: [0, 1] })
      await window.forward(Int32Array.from(prompt))
      await window.forward(Int32Array.of(9), { positions: 3 })
      expect(window.nPast).toBe(4)
      window.truncate(1)
      window.close()
    } finally {
      runtime.dispose()
    }
  }, 60_000)

  it('each block’s cache bytes are what gguf/block-cache.ts states for the family', async () => {
    const path = paths.q8_0 as string
    const layout = describeModel(await readGguf(path))
    const runtime = await ShardRuntime.load({
      artifacts: [path],
      blocks: [0, 4],
      embed: true,
      head: true,
      threads: 1,
      device: 'cpu',
    })
    try {
      for (const tokens of [256, 1024]) {
        const s = runtime.openSession({ maxTokens: tokens })
        expect(s.kvBytesPerBlock, `${tokens} tokens`).toEqual(
          layout.cachePerBlock.map((cache) => blockCacheBytes(cache, { tokens, sessions: 1 })),
        )
        s.close()
      }
      // by hand, at 1024 positions: a ring of 768 f16 keys of 64, then 256 compressed keys (+ 256 indexer keys of 64)
      // and f32 state of 2 x 8 rows x 2 x 64 (+ the indexer's) at ratio 4, 8 keys and 2 x 128 x 64 state at ratio 128
      const head = SHAPE.embd / SHAPE.heads
      const ring = 768 * head * 2
      const ratio4 = ring + 2 * (256 * head * 2) + 2 * (2 * 8 * 2 * head * 4)
      const ratio128 = ring + 8 * head * 2 + 2 * 128 * head * 4
      const s = runtime.openSession({ maxTokens: 1024 })
      expect(s.kvBytesPerBlock).toEqual([ring, ratio4, ratio128, ratio4])
      s.close()
    } finally {
      runtime.dispose()
    }
  })
})

describe('deepseek4: hostile artifacts are refused with a typed error, and the process keeps serving', () => {
  /** A copy of `source` with a u32 (or the first element of a u32 array) of `key` set to `value`. */
  async function patched(source: string, key: string, value: number, element = -1): Promise<string> {
    const bytes = await readFile(source)
    const at = bytes.indexOf(Buffer.from(`deepseek4.${key}`)) + `deepseek4.${key}`.length
    // a u32 (type 4), or an array (type 9) of u32 with a u64 count
    const where = element < 0 ? at + 4 : at + 4 + 4 + 8 + 4 * element
    expect(bytes.readUInt32LE(at)).toBe(element < 0 ? 4 : 9)
    bytes.writeUInt32LE(value, where)
    const out = `${source}.${key}-${element}-${value}.gguf`
    await writeFile(out, bytes)
    return out
  }

  it('stream counts, ratios, groups, hash blocks, scoring and hash tables the graph cannot take', async () => {
    const path = paths.q8_0 as string
    const load = (file: string) =>
      ShardRuntime.load({ artifacts: [file], blocks: [0, 4], embed: true, head: true, threads: 1, device: 'cpu' })
    await expect(load(await patched(path, 'hyper_connection.count', 3))).rejects.toMatchObject({ code: 'BAD_METADATA' })
    await expect(load(await patched(path, 'hash_layer_count', 5))).rejects.toMatchObject({ code: 'BAD_METADATA' })
    await expect(load(await patched(path, 'attention.output_group_count', 3))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    await expect(load(await patched(path, 'attention.indexer.top_k', 0))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    await expect(load(await patched(path, 'expert_gating_func', 1))).rejects.toMatchObject({
      code: 'UNSUPPORTED_MODEL',
    })
    await expect(load(await patched(path, 'attention.compress_ratios', 8, 1))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    // block 1 made window-only: its compressor tensors are no longer the shapes the metadata implies, or extra
    await expect(load(await patched(path, 'attention.compress_ratios', 128, 1))).rejects.toMatchObject({
      code: 'BAD_TENSOR',
    })
    // a token id -> experts table naming expert 8 of 8 would abort in the experts' matmul
    const table = (await readGguf(path)).tensors.find((t) => t.name === 'blk.1.ffn_gate_tid2eid.weight')
    const bytes = await readFile(path)
    bytes.writeInt32LE(8, (table?.offset ?? 0) + 4 * 17)
    const badTable = `${path}.tid2eid.gguf`
    await writeFile(badTable, bytes)
    await expect(load(badTable)).rejects.toMatchObject({
      code: 'BAD_TENSOR',
      message: expect.stringMatching(/names expert 8 of 8/),
    })
    const runtime = await load(path)
    const session = runtime.openSession({ maxTokens: 16 })
    expect((await session.forward(Int32Array.of(1, 2, 3))).kind).toBe('logits')
    session.close()
    runtime.dispose()
  })
})
