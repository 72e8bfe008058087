// deepseek4 against node-llama-cpp (models: test/deepseek4-models.ts): generated models greedy through every split
// (f32 seams: identical tokens, probabilities within MAX_DP; f16 seams reported), another layout of the indexer and
// output groups, and prompts long enough for the 128x compressor and for the window ring's slices.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { deepseek4Models, F16_STEPS, MAX_DP, SHAPE, STEPS, TYPES } from '../test/deepseek4-models'
import { greedyInChild } from '../test/greedy'
import { allSplits, generateThroughRoute, maxAbsDiff, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { quantizeRows } from './quantize'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let prompt: number[] = []
let paths: Record<string, string> = {}
let oracles: Record<string, OracleStep[]> = {}

beforeAll(async () => {
  ;({ dir, cleanup, prompt, paths, oracles } = await deepseek4Models())
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
