import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { packModel } from '../gguf/pack'
import { generateThroughRoute, maxAbsDiff, packedPool, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'

const STEPS = 32
// the dense architectures the runtime serves today
const ARCHS = ['llama', 'qwen2', 'qwen3'] as const
const TYPES = ['f16', 'q8_0', 'q4_0'] as const
// small but real: 4 blocks, GQA, quantizable widths (multiples of 32)
const SHAPE = { blocks: 4, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 7 }

const dir = mkdtempSync(join(tmpdir(), 'neuron-generated-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('generated models: greedy parity with node-llama-cpp through two shards', () => {
  for (const arch of ARCHS) {
    for (const type of TYPES) {
      it(`${arch} ${type}`, async () => {
        const path = join(dir, `${arch}-${type}.gguf`)
        await generateModel({ ...SHAPE, arch, type, out: path })
        const model = await oracleModel(path)
        const prompt = model.tokenize('Once upon a time')
        const oracle = await oracleGreedy(model, prompt, STEPS, SHAPE.vocab)
        await model.dispose()
        const pool = new RuntimePool(() => [path], SHAPE.blocks)
        try {
          for (const split of [
            [[0, SHAPE.blocks]],
            [
              [0, 2],
              [2, SHAPE.blocks],
            ],
          ] as [number, number][][]) {
            const route = await generateThroughRoute(pool, split, prompt, STEPS)
            expect(
              route.map((s) => s.token),
              `${arch} ${type} ${JSON.stringify(split)}`,
            ).toEqual(oracle.map((s) => s.token))
            if (split.length === 2) {
              const worst = Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
              const distinct = new Set(route.map((s) => s.token)).size
              console.log(
                `${arch} ${type}: ${distinct} distinct tokens in ${STEPS}; max |dp| vs llama.cpp ` +
                  `${worst.toExponential(2)}`,
              )
              expect(worst).toBeLessThan(1e-4)
            }
          }
        } finally {
          await pool.dispose()
        }
      })
    }
  }
})

describe('generated models: tied embeddings from packed artifacts, embed-only and head-only shards', () => {
  it('qwen3 q8_0 tied, route embed | [0,2) | [2,4) | head', async () => {
    const path = join(dir, 'qwen3-tied.gguf')
    await generateModel({ ...SHAPE, arch: 'qwen3', type: 'q8_0', tied: true, seed: 9, out: path })
    const packedDir = join(dir, 'qwen3-tied')
    const manifest = await packModel({ source: path, out: packedDir, blocksPerArtifact: 1 })
    expect(manifest.tiedEmbeddings).toBe(true)
    const model = await oracleModel(path)
    const prompt = model.tokenize('Once upon a time')
    const oracle = await oracleGreedy(model, prompt, STEPS, SHAPE.vocab)
    await model.dispose()
    const pool = packedPool(manifest, packedDir)
    try {
      const route = await generateThroughRoute(
        pool,
        [
          [0, 0],
          [0, 2],
          [2, 4],
          [4, 4],
        ],
        prompt,
        STEPS,
      )
      expect(route.map((s) => s.token)).toEqual(oracle.map((s) => s.token))
      const worst = Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
      expect(worst).toBeLessThan(1e-4)
      // the head-only shard loaded the output norm and the tied embedding, nothing else
      const head = await pool.get([4, 4], false, true)
      expect(head.info().weightBytes).toBeLessThan(SHAPE.vocab * SHAPE.embd * 2)
    } finally {
      await pool.dispose()
    }
  })
})
