// Tensors llama.cpp's loader marks "not required" are optional here too, and its alternatives load: a fused attn_qkv
// (create_tensor_qkv) in place of attn_q/attn_k/attn_v, Q/K/V biases present or not in every family, llama's FFN
// biases, and a fused ffn_gate_up_exps (create_tensor_gate_up_exps) in deepseek2 and qwen35moe. qwen35moe's loader
// also accepts a fused attn_qkv on its full-attention blocks, but its graph reads attn_q alone there
// (build_layer_attn), so llama.cpp cannot run such a file and neither does Neuron (MISSING_TENSOR). Each generated
// model must give node-llama-cpp's greedy tokens through two shards (the probabilities within 1e-4, as
// native/generated.test.ts measures for the separate-matrix models).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type GenerateOptions, generateModel } from '../gguf/generate'
import { generateThroughRoute, maxAbsDiff, RuntimePool } from '../test/native'
import { type OracleStep, oracleGreedy, oracleModel } from './oracle'
import { quantizeRows } from './quantize'

const STEPS = 24
const SHAPE = { blocks: 4, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 11, type: 'q8_0' as const }

const dir = mkdtempSync(join(tmpdir(), 'neuron-optional-tensors-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// the MoE families as native/moe.test.ts shapes them: 8 experts of which 2 run (deepseek2: one dense block first)
const MOE = { experts: 8, expertsUsed: 2 }
type CaseOptions = Pick<
  GenerateOptions,
  'arch' | 'fusedQkv' | 'qkvBias' | 'ffnBias' | 'fusedGateUp' | 'experts' | 'expertsUsed' | 'expertFf'
>
const CASES: { name: string; options: CaseOptions }[] = [
  { name: 'llama with a fused attn_qkv', options: { arch: 'llama', fusedQkv: true } },
  { name: 'llama with Q/K/V and FFN biases', options: { arch: 'llama', qkvBias: true, ffnBias: true } },
  { name: 'qwen2 without Q/K/V biases', options: { arch: 'qwen2', qkvBias: false } },
  { name: 'qwen2 with a fused attn_qkv and its bias', options: { arch: 'qwen2', fusedQkv: true } },
  { name: 'qwen3 with a fused attn_qkv (then Q and K norms on its views)', options: { arch: 'qwen3', fusedQkv: true } },
  { name: 'gpt-oss without Q/K/V biases', options: { arch: 'gpt-oss', qkvBias: false } },
  {
    name: 'deepseek2 with a fused ffn_gate_up_exps',
    options: { arch: 'deepseek2', fusedGateUp: true, ...MOE, expertFf: 128 },
  },
  { name: 'qwen35moe with a fused ffn_gate_up_exps', options: { arch: 'qwen35moe', fusedGateUp: true, ...MOE } },
]

describe('tensors llama.cpp treats as optional, or accepts fused', () => {
  for (const { name, options } of CASES) {
    it(`${name}: llama.cpp's greedy tokens through two shards`, async () => {
      const path = join(dir, `${name.replaceAll(/\W+/g, '-')}.gguf`)
      await generateModel({ ...SHAPE, ...options, out: path, quantize: quantizeRows })
      const model = await oracleModel(path)
      const prompt = model.tokenize('Once upon a time')
      const oracle = await oracleGreedy(model, prompt, STEPS, SHAPE.vocab)
      await model.dispose()
      const pool = new RuntimePool(() => [path], SHAPE.blocks)
      try {
        const route = await generateThroughRoute(
          pool,
          [
            [0, 2],
            [2, SHAPE.blocks],
          ],
          prompt,
          STEPS,
        )
        expect(route.map((s) => s.token)).toEqual(oracle.map((s) => s.token))
        const worst = Math.max(...route.map((s, i) => maxAbsDiff(s.probs, (oracle[i] as OracleStep).probs)))
        console.log(`${name}: max |dp| vs llama.cpp ${worst.toExponential(2)} over ${STEPS} steps`)
        expect(worst).toBeLessThan(1e-4)
      } finally {
        await pool.dispose()
      }
    })
  }
})
