// glm-dsa (GLM-5.x) against node-llama-cpp: deepseek2's MLA plus a lightning indexer whose "full" blocks keep each
// token's top-k cells, which the "shared" blocks after them reuse. A generated model (full blocks 0 and 3, shared 1, 2
// and 4, top-k 8, so the selection bites after 8 positions) greedy through every split, where the indices cross the
// seams before shared blocks (f32 seams: identical tokens, probabilities within 1e-5; f16 seams reported); a context
// shorter than top-k; cache bytes and seams as the manifest states them; bad side inputs refused; rollback.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { describeModel } from '../gguf/model'
import { type GgufKv, readGguf } from '../gguf/reader'
import { serializeHeader } from '../gguf/writer'
import { scratchDir } from '../test/models'
import { allSplits, generateThroughRoute, logitsOf, maxAbsDiff, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { quantizeRows } from './quantize'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

const STEPS = 32
const F16_STEPS = 64
/** Largest |Δp| of any token at any step, f32 seams: measured 1.3e-6 (f16 weights) on this model. */
const MAX_DP = 1e-5
const TOP_K = 8
const SHAPE = {
  blocks: 5,
  embd: 256,
  heads: 4,
  kvHeads: 2,
  ff: 256,
  vocab: 384,
  seed: 1,
  fullIndexerInterval: 3,
  indexerTopK: TOP_K,
}
const FULL = [true, false, false, true, false]

let dir = ''
let cleanup: () => Promise<void> = async () => {}
const paths: Record<string, string> = {}
let prompt: number[] = []
const oracles: Record<string, OracleStep[]> = {}

async function generate(type: 'f16' | 'q8_0', topK = TOP_K): Promise<string> {
  const out = join(dir, `glm-dsa-${type}-top${topK}.gguf`)
  await generateModel({ ...SHAPE, indexerTopK: topK, arch: 'glm-dsa', type, out, quantize: quantizeRows })
  return out
}

async function oracleOf(path: string, input: number[], steps: number): Promise<OracleStep[]> {
  const model = await oracleModel(path)
  try {
    return await oracleGreedy(model, input, steps, SHAPE.vocab)
  } finally {
    await model.dispose()
  }
}

const tokensOf = (steps: { token: number }[]) => steps.map((s) => s.token)

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-glm-dsa-'))
  for (const type of ['f16', 'q8_0'] as const) paths[type] = await generate(type)
  const model = await oracleModel(paths.f16 as string)
  prompt = model.tokenize('Once upon a time')
  await model.dispose()
  for (const type of ['f16', 'q8_0']) oracles[type] = await oracleOf(paths[type] as string, prompt, F16_STEPS)
}, 120_000)
afterAll(() => cleanup())

describe('glm-dsa: greedy parity with node-llama-cpp', () => {
  for (const type of ['f16', 'q8_0'] as const) {
    it(`${type}: every split of its 5 blocks (top-k indices crossing before shared blocks 1, 2 and 4) gives ` +
      `llama.cpp’s tokens`, async () => {
      const oracle = oracles[type] as OracleStep[]
      const pool = new RuntimePool(() => [paths[type] as string], SHAPE.blocks)
      try {
        let worst = 0
        for (const split of allSplits(SHAPE.blocks)) {
          const route = await generateThroughRoute(pool, split, prompt, STEPS)
          expect(tokensOf(route), `${type} ${JSON.stringify(split)}`).toEqual(tokensOf(oracle.slice(0, STEPS)))
          worst = Math.max(worst, ...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
        }
        expect(worst).toBeLessThanOrEqual(MAX_DP)
        // f16 seams round each hidden state to 11 bits at every cut (the indices cross exactly): report the agreement
        const split: [number, number][] = [
          [0, 1],
          [1, 3],
          [3, 5],
        ]
        const f16 = await generateThroughRoute(pool, split, prompt, F16_STEPS, 'f16')
        const agree = f16.filter((s, i) => s.token === (oracle[i] as OracleStep).token).length
        const first = f16.findIndex((s, i) => s.token !== (oracle[i] as OracleStep).token)
        const distinct = new Set(tokensOf(oracle)).size
        console.log(
          `glm-dsa ${type}: ${distinct} distinct tokens in ${F16_STEPS}; max |dp| ${worst.toExponential(2)} over ` +
            `${allSplits(SHAPE.blocks).length} splits (f32 seams); f16 seams ${JSON.stringify(split)}: ` +
            `${agree}/${F16_STEPS} tokens agree, first difference at ${first < 0 ? 'none' : first}`,
        )
        expect(distinct).toBeGreaterThanOrEqual(8)
      } finally {
        await pool.dispose()
      }
    }, 300_000)
  }
})

describe('glm-dsa: the top-k indices', () => {
  it('the selection matters: with top-k 512 (every cell) llama.cpp continues otherwise, and so do we', async () => {
    const all = await generate('f16', 512)
    const oracle = await oracleOf(all, prompt, STEPS)
    expect(tokensOf(oracle)).not.toEqual(tokensOf((oracles.f16 as OracleStep[]).slice(0, STEPS)))
    const pool = new RuntimePool(() => [all], SHAPE.blocks)
    try {
      const route = await generateThroughRoute(
        pool,
        [
          [0, 1],
          [1, 2],
          [2, 5],
        ],
        prompt,
        STEPS,
      )
      expect(tokensOf(route)).toEqual(tokensOf(oracle))
      // a context shorter than top-k keeps every cell (llama.cpp: n_top_k = min(n_kv, top_k)): the indices that
      // cross are each token's positions 0..p, then -1 up to top-k
      const session = (await pool.get([0, 1])).openSession({ maxTokens: 256 })
      const out = await session.forward(Int32Array.from(prompt))
      expect(out.kind === 'hidden' && out.indices?.length).toBe(prompt.length * 512)
      const indices = out.kind === 'hidden' ? (out.indices as Int32Array) : new Int32Array()
      for (let i = 0; i < prompt.length; i++) {
        const row = Array.from(indices.subarray(i * 512, (i + 1) * 512))
        expect(row).toEqual(Array.from({ length: 512 }, (_, j) => (j <= i ? j : -1)))
      }
      session.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('a 150-token prefill (top-k chosen within the batch) then greedy decoding equal llama.cpp’s through ' +
    'splits', async () => {
    const long = Array.from({ length: 150 }, (_, i) => 3 + ((i * 7919) % (SHAPE.vocab - 3)))
    const expected = await oracleOf(paths.f16 as string, long, 8)
    const pool = new RuntimePool(() => [paths.f16 as string], SHAPE.blocks)
    try {
      for (const split of [
        [[0, 5]],
        [
          [0, 2],
          [2, 3],
          [3, 5],
        ],
      ] as [number, number][][]) {
        const route = await generateThroughRoute(pool, split, long, 8)
        expect(tokensOf(route), JSON.stringify(split)).toEqual(tokensOf(expected))
        expect(
          Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (expected[i] as OracleStep).probs))),
        ).toBeLessThanOrEqual(MAX_DP)
      }
      // each token keeps its 8 best cells at or before its own position, ascending
      const session = (await pool.get([0, 2])).openSession({ maxTokens: 256 })
      const out = await session.forward(Int32Array.from(long))
      const indices = out.kind === 'hidden' ? (out.indices as Int32Array) : new Int32Array()
      expect(indices.length).toBe(long.length * TOP_K)
      for (let i = 0; i < long.length; i++) {
        const row = Array.from(indices.subarray(i * TOP_K, (i + 1) * TOP_K)).filter((v) => v >= 0)
        expect(row.length).toBe(Math.min(i + 1, TOP_K))
        expect(row.every((v, j) => v <= i && (j === 0 || v > (row[j - 1] as number)))).toBe(true)
      }
      session.close()
    } finally {
      await pool.dispose()
    }
  }, 180_000)
})

describe('glm-dsa: seams, cache and rollback', () => {
  let runtime: ShardRuntime
  beforeAll(async () => {
    runtime = await ShardRuntime.load({
      artifacts: [paths.f16 as string],
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: 1,
      device: 'cpu',
    })
  })
  afterAll(() => runtime.dispose())

  it('each session’s indices in and out, and each block’s cache bytes, are what the manifest states', async () => {
    const layout = describeModel(await readGguf(paths.f16 as string))
    expect(layout.seams.map((s) => s.int32PerToken)).toEqual([TOP_K, TOP_K, 0, TOP_K])
    for (const [from, to] of allSplits(SHAPE.blocks).flat()) {
      const s = runtime.openSession({ maxTokens: 300, blocks: [from, to] })
      const seamIn = from === 0 ? 0 : (layout.seams[from - 1]?.int32PerToken ?? 0)
      const seamOut = to === SHAPE.blocks ? 0 : (layout.seams[to - 1]?.int32PerToken ?? 0)
      expect([s.indicesIn, s.indicesOut, s.inputWidth, s.outputWidth, s.needsTokenIds], `[${from}, ${to})`).toEqual([
        seamIn,
        seamOut,
        SHAPE.embd,
        SHAPE.embd,
        false,
      ])
      // the MLA latent on every block, plus the indexer's keys on full blocks (f16, one per cell)
      expect(s.kvBytesPerBlock).toEqual(layout.cachePerBlock.slice(from, to).map((c) => c.bytesPerToken * 300))
      s.close()
    }
    const latent = 2 * (64 + 32) // f16 kv_lora_rank + rope dims
    expect(layout.cachePerBlock.map((c) => c.bytesPerToken)).toEqual(FULL.map((full) => latent + (full ? 2 * 64 : 0)))
  })

  it(
    'refuses missing, short, out-of-range and unwanted ' + 'side inputs with typed errors, and goes on serving',
    async () => {
      const first = runtime.openSession({ maxTokens: 64, blocks: [0, 1] })
      const rest = runtime.openSession({ maxTokens: 64, blocks: [1, 5] })
      const out = await first.forward(Int32Array.from(prompt))
      if (out.kind !== 'hidden' || !out.indices) throw new Error('block 0 hands on hidden states and indices')
      const { data, indices } = out
      const n = prompt.length
      const bad = (options: object) => rest.forward(data, options)
      await expect(bad({})).rejects.toMatchObject({ code: 'BAD_INDICES', details: { got: 0, expected: n * TOP_K } })
      await expect(bad({ indices: indices.subarray(TOP_K) })).rejects.toMatchObject({ code: 'BAD_INDICES' })
      const future = indices.slice()
      future[0] = 1 // token 0 (position 0) pointing at position 1
      await expect(bad({ indices: future })).rejects.toMatchObject({
        code: 'BAD_INDICES',
        details: { index: 1, token: 0, position: 0 },
      })
      const negative = indices.slice()
      negative[TOP_K + 1] = -2
      await expect(bad({ indices: negative })).rejects.toMatchObject({
        code: 'BAD_INDICES',
        details: { index: -2, token: 1 },
      })
      const none = indices.slice()
      none.fill(-1, 2 * TOP_K, 3 * TOP_K)
      await expect(bad({ indices: none })).rejects.toMatchObject({
        code: 'BAD_INDICES',
        details: { token: 2, position: 2 },
      })
      await expect(bad({ indices: Float32Array.from(indices) })).rejects.toMatchObject({ code: 'BAD_INPUT' })
      await expect(bad({ indices, tokenIds: Int32Array.from(prompt) })).rejects.toMatchObject({
        code: 'TOKEN_IDS_UNEXPECTED',
      })
      await expect(first.forward(Int32Array.of(5), { indices: new Int32Array(TOP_K).fill(-1) })).rejects.toMatchObject({
        code: 'BAD_INDICES',
      })
      expect([first.nPast, rest.nPast]).toEqual([n, 0])
      expect((await rest.forward(data, { indices })).kind).toBe('logits')
      first.close()
      rest.close()
    },
  )

  it('rolls back like any cache of positions: truncate and regenerate, or restart earlier, give the fresh run’s ' +
    'tokens', async () => {
    /** Greedy tokens through [0, 2) and [2, 5) from where the sessions are, starting with `input`. */
    async function run(sessions: ShardSession[], input: number[], steps: number, start?: number) {
      const tokens: number[] = []
      let logits: Float32Array = new Float32Array()
      let x: Int32Array | Float32Array | Uint16Array = Int32Array.from(input)
      for (let step = 0; step < steps; step++) {
        let indices: Int32Array | undefined
        for (const s of sessions) {
          const out = await s.forward(x, {
            ...(step === 0 && start !== undefined ? { positions: start } : {}),
            ...(s.indicesIn ? { indices } : {}),
          })
          if (out.kind === 'logits') logits = logitsOf(out)
          else [x, indices] = [out.data, out.indices]
        }
        const token = (sessions[1] as ShardSession).sample({ temperature: 0 }).token
        tokens.push(token)
        x = Int32Array.of(token)
      }
      return { tokens, logits }
    }
    const open = () => [
      runtime.openSession({ maxTokens: 128, blocks: [0, 2] }),
      runtime.openSession({ maxTokens: 128, blocks: [2, 5] }),
    ]
    const fresh = open()
    const expected = await run(fresh, prompt, 16)
    expect(expected.tokens).toEqual(tokensOf((oracles.f16 as OracleStep[]).slice(0, 16)))
    const sessions = open()
    await run(sessions, prompt, 24) // past the point to come back to
    for (const s of sessions) s.truncate(prompt.length + 4)
    const again = await run(sessions, [expected.tokens[4] as number], 11)
    expect(again.tokens).toEqual(expected.tokens.slice(5))
    expect(Array.from(again.logits)).toEqual(Array.from(expected.logits))
    // a forward may also start before nPast: the later cells are rewritten
    const replay = await run(sessions, [...prompt, ...expected.tokens.slice(0, 2)], 4, 0)
    expect(replay.tokens).toEqual(expected.tokens.slice(2, 6))
    for (const s of [...fresh, ...sessions]) s.close()
  }, 60_000)
})

describe('glm-dsa: hostile metadata is refused with a typed error', () => {
  /** The f16 model with some metadata values replaced (the tensors as they were). */
  async function withMetadata(name: string, values: Record<string, unknown>): Promise<string> {
    const file = await readGguf(paths.f16 as string)
    const bytes = await readFile(file.path)
    const kvs = file.kvs.map((kv): GgufKv => (kv.key in values ? { ...kv, value: values[kv.key] } : kv))
    const header = serializeHeader(kvs, file.tensors, file.alignment)
    const body = Buffer.alloc(header.fileBytes - header.bytes.length)
    for (const [i, t] of file.tensors.entries())
      bytes.copy(body, header.dataOffsets[i] ?? 0, t.offset, t.offset + t.bytes)
    const out = join(dir, `hostile-${name}.gguf`)
    await writeFile(out, Buffer.concat([header.bytes, body]))
    return out
  }
  const load = (file: string) =>
    ShardRuntime.load({ artifacts: [file], blocks: [0, 5], embed: true, head: true, threads: 1, device: 'cpu' })

  it(
    'a shared block 0, a types array of the wrong length, ' + 'a full block without its indexer, odd indexer sizes',
    async () => {
      const types = 'glm-dsa.attention.indexer.types'
      // llama.cpp asserts (aborts) on a shared block with no full block before it
      await expect(load(await withMetadata('shared-first', { [types]: [0, 1, 1, 0, 1] }))).rejects.toMatchObject({
        code: 'BAD_METADATA',
        details: { key: types },
      })
      await expect(load(await withMetadata('types-short', { [types]: [1, 0, 0, 1] }))).rejects.toMatchObject({
        code: 'BAD_METADATA',
      })
      // block 4 made full: its indexer's tensors are not in the file (llama.cpp would build a graph over null weights)
      await expect(load(await withMetadata('full-4', { [types]: [1, 0, 0, 1, 1] }))).rejects.toMatchObject({
        code: 'MISSING_TENSOR',
      })
      // the Hadamard rotation needs a power of two from 64
      const keyLength = 'glm-dsa.attention.indexer.key_length'
      await expect(load(await withMetadata('key-96', { [keyLength]: 96 }))).rejects.toMatchObject({
        code: 'BAD_METADATA',
        details: { value: 96 },
      })
      await expect(load(await withMetadata('top-k-0', { 'glm-dsa.attention.indexer.top_k': 0 }))).rejects.toMatchObject(
        {
          code: 'BAD_METADATA',
        },
      )
      // the same tensors with the model's own metadata still serve
      const runtime = await load(await withMetadata('unchanged', {}))
      const session = runtime.openSession({ maxTokens: 16 })
      expect((await session.forward(Int32Array.of(1, 2, 3))).kind).toBe('logits')
      session.close()
      runtime.dispose()
    },
  )
})
