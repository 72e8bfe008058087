import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  allSplits,
  generateThroughRoute,
  maxAbsDiff,
  packedPool,
  packedStories,
  type RuntimePool,
  removePackedStories,
  STORIES,
} from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'

const STEPS = 64

describe(`route parity with node-llama-cpp on stories260K`, () => {
  let prompt: number[]
  let oracle: OracleStep[]
  let pool: RuntimePool

  beforeAll(async () => {
    const model = await oracleModel(STORIES)
    prompt = model.tokenize('Once upon a time')
    oracle = await oracleGreedy(model, prompt, STEPS, 512)
    await model.dispose()
    const { manifest, dir } = await packedStories()
    pool = packedPool(manifest, dir)
  })
  afterAll(async () => {
    await pool?.dispose()
    removePackedStories()
  })

  it('three shards with f32 seams give the same 64 greedy tokens and probabilities within 1e-4', async () => {
    const route = await generateThroughRoute(
      pool,
      [
        [0, 2],
        [2, 4],
        [4, 5],
      ],
      prompt,
      STEPS,
    )
    expect(route.map((s) => s.token)).toEqual(oracle.map((s) => s.token))
    const worst = Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
    console.log(`max |p_ours - p_llama.cpp| over ${STEPS} steps x 512 tokens: ${worst.toExponential(2)}`)
    expect(worst).toBeLessThan(1e-4)
  })

  it('every split of the 5 blocks (1 to 5 shards) gives the same tokens', async () => {
    const want = oracle.map((s) => s.token)
    for (const split of allSplits(5)) {
      const route = await generateThroughRoute(pool, split, prompt, STEPS)
      expect(
        route.map((s) => s.token),
        JSON.stringify(split),
      ).toEqual(want)
    }
  })

  it('f16 hidden states on the seams agree with the f32 run on at least 95% of 64 tokens', async () => {
    const split: [number, number][] = [
      [0, 2],
      [2, 4],
      [4, 5],
    ]
    const f32 = await generateThroughRoute(pool, split, prompt, STEPS, 'f32')
    const f16 = await generateThroughRoute(pool, split, prompt, STEPS, 'f16')
    const same = f16.filter((s, i) => s.token === f32[i]?.token).length
    console.log(`f16 seam token agreement with f32: ${same}/${STEPS} (${((100 * same) / STEPS).toFixed(1)}%)`)
    expect(same / STEPS).toBeGreaterThanOrEqual(0.95)
  })
})
