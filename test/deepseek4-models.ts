// Test helper: generated deepseek4 (DeepSeek-V4-Flash's architecture) models for native/deepseek4-*.test.ts, with
// llama.cpp's greedy answers. Four hyper-connection streams between blocks (a seam is 4 x n_embd per token),
// hash-routed experts on the first blocks (their token ids cross the seam), a sliding window of 8 on every block
// plus compressed keys every 4 positions (with the lightning indexer's top-k) or every 128.
import { join } from 'node:path'
import { expect } from 'vitest'
import { generateModel } from '../gguf/generate'
import { type OracleStep, oracleGreedy, oracleModel } from '../native/oracle'
import { quantizeRows } from '../native/quantize'
import { greedyInChild } from './greedy'
import { scratchDir } from './models'

export const STEPS = 32
export const F16_STEPS = 64
/** Largest |Δp| of any token at any step with f32 seams: measured ≤ 1.1e-6 (f16 and q8_0 weights, AVX2). */
export const MAX_DP = 1e-5
export const TYPES = ['f16', 'q8_0'] as const
// llama.cpp's deepseek4 needs at least one ratio-4 and one ratio-128 block, 4 streams, an indexer head of 64;
// blocks 0 and 1 route by token id, so a hop starting at block 1 needs the ids; 8 positions of window
export const SHAPE = {
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
export const HC = 4

export type Deepseek4Models = {
  dir: string
  cleanup: () => Promise<void>
  /** The prompt's token ids ('Once upon a time'). */
  prompt: number[]
  /** Each weight type's model file. */
  paths: Record<string, string>
  /** llama.cpp's F16_STEPS greedy steps from the prompt, per weight type. */
  oracles: Record<string, OracleStep[]>
}

/** SHAPE's model at each of `types`, in a scratch dir, with llama.cpp's greedy steps (checked against a child's). */
export async function deepseek4Models(types: readonly (typeof TYPES)[number][] = TYPES): Promise<Deepseek4Models> {
  const { dir, cleanup } = await scratchDir('neuron-deepseek4-')
  const paths: Record<string, string> = {}
  const oracles: Record<string, OracleStep[]> = {}
  let prompt: number[] = []
  for (const type of types) {
    paths[type] = join(dir, `deepseek4-${type}.gguf`)
    await generateModel({ ...SHAPE, type, out: paths[type], quantize: quantizeRows })
  }
  // a model llama.cpp rejects aborts its process: load them in a child first, then here for the probabilities
  const children = await greedyInChild(Object.values(paths), 8)
  for (const [i, type] of types.entries()) {
    const model = await oracleModel(paths[type] as string)
    prompt = model.tokenize('Once upon a time')
    oracles[type] = await oracleGreedy(model, prompt, F16_STEPS, SHAPE.vocab)
    await model.dispose()
    expect(oracles[type]?.slice(0, 8).map((s) => s.token)).toEqual(children[i]?.tokens)
  }
  return { dir, cleanup, prompt, paths, oracles }
}
