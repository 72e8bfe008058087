// Mixture-of-experts and MLA families against node-llama-cpp (llama.cpp's own graphs, same ggml):
// generated models of each new architecture and weight type, greedy through every split of their
// blocks with f32 seams (identical tokens, next-token probabilities within 1e-5), and with f16
// seams (the wire's default), where the agreement is measured and reported.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GeneratedArch, generateModel } from '../gguf/generate'
import { scratchDir } from '../test/models'
import { allSplits, generateThroughRoute, maxAbsDiff, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { quantizeRows } from './quantize'
import { ShardRuntime } from './shard-runtime'

const STEPS = 32
const F16_STEPS = 64
/** Largest |Δp| of any token at any step, f32 seams: measured ≤ 1.5e-6 on these models (AVX2 and AVX-512). */
const MAX_DP = 1e-5
const ARCHS: GeneratedArch[] = ['qwen3moe', 'mixtral', 'deepseek2', 'gpt-oss', 'qwen35moe']
const TYPES = ['f16', 'q8_0', 'q4_0', 'q4_K_M'] as const
// 4 blocks (deepseek2: one dense, three with experts), widths K-quants can pack (256), 8 experts of which 2 run;
// gpt-oss's window of 8 positions is shorter than a generation, so its sliding-window blocks really slide
const SHAPE = { blocks: 4, embd: 256, heads: 4, kvHeads: 2, ff: 512, vocab: 384, seed: 5, experts: 8, expertsUsed: 2 }
const EXTRA: Partial<Record<GeneratedArch, object>> = {
  qwen3moe: { expertFf: 256 },
  deepseek2: { expertFf: 256 },
  'gpt-oss': { expertFf: 256, slidingWindow: 8 },
}

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-moe-'))
})
afterAll(() => cleanup())

describe('MoE and MLA models: greedy parity with node-llama-cpp through every split', () => {
  for (const arch of ARCHS) {
    for (const type of TYPES) {
      it(`${arch} ${type}`, async () => {
        const path = join(dir, `${arch}-${type}.gguf`)
        await generateModel({ ...SHAPE, ...EXTRA[arch], arch, type, out: path, quantize: quantizeRows })
        const model = await oracleModel(path)
        const prompt = model.tokenize('Once upon a time')
        const oracle = await oracleGreedy(model, prompt, F16_STEPS, SHAPE.vocab)
        await model.dispose()
        const pool = new RuntimePool(() => [path], SHAPE.blocks)
        try {
          let worst = 0
          for (const split of allSplits(SHAPE.blocks)) {
            const route = await generateThroughRoute(pool, split, prompt, STEPS)
            expect(
              route.map((s) => s.token),
              `${arch} ${type} ${JSON.stringify(split)}`,
            ).toEqual(oracle.slice(0, STEPS).map((s) => s.token))
            worst = Math.max(worst, ...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
          }
          expect(worst).toBeLessThanOrEqual(MAX_DP)
          // f16 seams round each hidden state to 11 bits at every cut: report how long greedy decoding agrees
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
          const same = f16.findIndex((s, i) => s.token !== (oracle[i] as OracleStep).token)
          const agree = f16.filter((s, i) => s.token === (oracle[i] as OracleStep).token).length
          const distinct = new Set(oracle.map((s) => s.token)).size
          console.log(
            `${arch} ${type}: ${distinct} distinct tokens in ${F16_STEPS}; max |dp| ${worst.toExponential(2)} over ` +
              `${allSplits(SHAPE.blocks).length} splits (f32 seams); f16 seams: ${agree}/${F16_STEPS} tokens ` +
              `agree, first difference at ${same < 0 ? 'none' : same}`,
          )
          expect(distinct).toBeGreaterThanOrEqual(8)
        } finally {
          await pool.dispose()
        }
      }, 120_000)
    }
  }
})

describe('gpt-oss sliding-window blocks keep a ring of cells', () => {
  // a window of 8: each sliding-window block keeps 8 + 512
  // positions rounded up to 768 cells, whatever the session's size
  const WINDOW = 8
  const RING = 768
  const MAX_TOKENS = 2048
  const prompt = Array.from({ length: 1500 }, (_, i) => 3 + ((i * 7919) % (SHAPE.vocab - 3)))
  let path = ''
  beforeAll(async () => {
    path = join(dir, 'gpt-oss-window.gguf')
    await generateModel({
      ...SHAPE,
      ...EXTRA['gpt-oss'],
      slidingWindow: WINDOW,
      arch: 'gpt-oss',
      type: 'q8_0',
      out: path,
    })
  })

  it('a 1500-token prompt (two slices through the ring) then greedy decoding equal llama.cpp’s; a sliding block ' +
    'caches 768 of 2048 positions', async () => {
    const model = await oracleModel(path)
    const oracle = await oracleGreedy(model, prompt, 8, SHAPE.vocab, { contextSize: MAX_TOKENS })
    await model.dispose()
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      for (const split of [
        [[0, 4]],
        [
          [0, 1],
          [1, 4],
        ],
      ] as [number, number][][]) {
        const route = await generateThroughRoute(pool, split, prompt, 8, 'f32', MAX_TOKENS)
        expect(
          route.map((s) => s.token),
          JSON.stringify(split),
        ).toEqual(oracle.map((s) => s.token))
      }
      const rt = await pool.get([0, 4])
      const session = rt.openSession({ maxTokens: MAX_TOKENS })
      // even blocks slide (llama.cpp's pattern of 2), odd blocks attend to everything
      const [slide, full] = session.kvBytesPerBlock
      expect((slide as number) / (full as number)).toBeCloseTo(RING / MAX_TOKENS, 6)
      session.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('rolls back within the ring’s slack to the same tokens as a fresh run, and refuses further with ' +
    'SWA_ROLLBACK', async () => {
    const pool = new RuntimePool(() => [path], SHAPE.blocks)
    try {
      const rt = await pool.get([0, 4])
      const fresh = rt.openSession({ maxTokens: MAX_TOKENS })
      await fresh.forward(Int32Array.from(prompt.slice(0, 1000)))
      const expected = fresh.sample({ temperature: 0 }).token
      fresh.close()

      const session = rt.openSession({ maxTokens: MAX_TOKENS })
      await session.forward(Int32Array.from(prompt.slice(0, 1200)))
      // back 200 positions (< 512 of slack): the ring still holds the window before position 999
      await session.forward(Int32Array.of(prompt[999] as number), { positions: 999 })
      expect(session.sample({ temperature: 0 }).token).toBe(expected)
      await session.forward(Int32Array.from(prompt.slice(1000, 1500)), { positions: 1000 })
      // back 1000 positions: overwritten cells; position 0 (a full replay) is always allowed
      await expect(session.forward(Int32Array.of(prompt[499] as number), { positions: 499 })).rejects.toMatchObject({
        code: 'SWA_ROLLBACK',
      })
      expect(() => session.truncate(400)).toThrow(/replay the session from position 0/)
      // nor by steps: back to 1000 is within the slack of 1500, but 400 after it is measured from 1500 too
      session.truncate(1000)
      expect(() => session.truncate(400)).toThrow(/replay the session from position 0/)
      await session.forward(Int32Array.from(prompt.slice(0, 1000)), { positions: 0 })
      expect(session.sample({ temperature: 0 }).token).toBe(expected)
      session.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)
})

describe('hostile metadata: an artifact whose metadata and tensors disagree is refused with a typed error', () => {
  /** The file with one u32 metadata value replaced, as a dishonest publisher could write it. */
  async function patched(source: string, key: string, value: number): Promise<string> {
    const bytes = await readFile(source)
    const at = bytes.indexOf(Buffer.from(key))
    expect(at).toBeGreaterThan(0)
    // after the key: its type (u32 = 4), then the value
    expect(bytes.readUInt32LE(at + key.length)).toBe(4)
    bytes.writeUInt32LE(value, at + key.length + 4)
    const out = `${source}.${key}-${value}.gguf`
    await writeFile(out, bytes)
    return out
  }

  it(
    'more experts than the tensors hold, or KV heads that do not divide the heads: BAD_TENSOR / BAD_METADATA, and ' +
      'the process keeps serving',
    async () => {
      const path = join(dir, 'qwen3moe-hostile.gguf')
      await generateModel({ ...SHAPE, ...EXTRA.qwen3moe, arch: 'qwen3moe', type: 'q8_0', out: path })
      const load = (file: string) =>
        ShardRuntime.load({ artifacts: [file], blocks: [0, 4], embed: true, head: true, threads: 1, device: 'cpu' })
      await expect(load(await patched(path, 'qwen3moe.expert_count', 16))).rejects.toMatchObject({
        code: 'BAD_TENSOR',
        message: expect.stringMatching(
          /blk\.0\.ffn_gate_inp\.weight is 256 x 8, but the model's metadata makes it 256 x 16/,
        ),
      })
      await expect(load(await patched(path, 'qwen3moe.attention.head_count_kv', 3))).rejects.toMatchObject({
        code: 'BAD_METADATA',
      })
      await expect(load(await patched(path, 'qwen3moe.expert_used_count', 9))).rejects.toMatchObject({
        code: 'BAD_METADATA',
      })
      // no heads: nothing may divide by it
      await expect(load(await patched(path, 'qwen3moe.attention.head_count', 0))).rejects.toMatchObject({
        code: 'BAD_METADATA',
      })
      const runtime = await load(path)
      const session = runtime.openSession({ maxTokens: 16 })
      expect((await session.forward(Int32Array.of(1, 2, 3))).kind).toBe('logits')
      session.close()
      runtime.dispose()
    },
  )
})
