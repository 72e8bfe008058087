// Building blocks for generated models' tensor lists and hyper-parameters: each kind of tensor
// with the spread of random values it gets, the expert FFN every MoE family shares, typed GGUF keys.
import { GGUFValueType } from '@huggingface/gguf'
import type { GenerateOptions } from './generate-options'
import type { PlannedTensor } from './generate-quant'
import type { GgufKv } from './reader'

export const uniform = (name: string, shape: number[], std: number, mean = 0): PlannedTensor => ({
  name,
  shape,
  init: { kind: 'uniform', std, mean },
})
/** A matrix with values 1/√fan-in, so activations keep their scale. */
export const dense = (name: string, nIn: number, ...rest: number[]): PlannedTensor =>
  uniform(name, [nIn, ...rest], 1 / Math.sqrt(nIn))
export const norm = (name: string, n: number): PlannedTensor => ({
  name,
  shape: [n],
  init: { kind: 'around-one', spread: 0.1 },
})
export const bias = (name: string, ...shape: number[]): PlannedTensor => uniform(name, shape, 0.1)

/** Router logits a few units apart; sigmoid and sqrt-softplus gating saturate, so theirs stay nearer zero. */
export function routerStd(o: GenerateOptions): number {
  return (o.arch === 'deepseek2' || o.arch === 'glm-dsa' || o.arch === 'deepseek4' ? 2 : 4) / Math.sqrt(o.embd)
}

/** Logits with a spread of a few units, so greedy choices are clear rather than near-ties. */
export const outputStd = (o: GenerateOptions): number => 3.5 / Math.sqrt(o.embd)

/**
 * Router and routed experts of one block (gate, down, up), as llama.cpp's build_moe_ffn reads them; `fusedGateUp`: gate
 * and up in one ffn_gate_up_exps tensor (gate's rows first), as its create_tensor_gate_up_exps accepts.
 */
export function routedExperts(
  b: string,
  embd: number,
  expertFf: number,
  experts: number,
  routerStd: number,
  fusedGateUp = false,
): PlannedTensor[] {
  const router = uniform(`${b}.ffn_gate_inp.weight`, [embd, experts], routerStd)
  const down = dense(`${b}.ffn_down_exps.weight`, expertFf, embd, experts)
  if (fusedGateUp) return [router, dense(`${b}.ffn_gate_up_exps.weight`, embd, 2 * expertFf, experts), down]
  return [
    router,
    dense(`${b}.ffn_gate_exps.weight`, embd, expertFf, experts),
    down,
    dense(`${b}.ffn_up_exps.weight`, embd, expertFf, experts),
  ]
}

/** A block's shared expert: a dense SwiGLU feed-forward `width` wide beside the routed ones. */
export function sharedExpert(b: string, embd: number, width: number): PlannedTensor[] {
  return [
    dense(`${b}.ffn_gate_shexp.weight`, embd, width),
    dense(`${b}.ffn_down_shexp.weight`, width, embd),
    dense(`${b}.ffn_up_shexp.weight`, embd, width),
  ]
}

/** Typed GGUF keys under an architecture's prefix. */
export function archKeys(prefix: string) {
  const key = (k: string) => `${prefix}.${k}`
  return {
    u32: (k: string, value: number): GgufKv => ({ key: key(k), type: GGUFValueType.UINT32, value }),
    f32: (k: string, value: number): GgufKv => ({ key: key(k), type: GGUFValueType.FLOAT32, value }),
    bool: (k: string, value: boolean): GgufKv => ({ key: key(k), type: GGUFValueType.BOOL, value }),
    u32s: (k: string, value: number[]): GgufKv => ({
      key: key(k),
      type: GGUFValueType.ARRAY,
      subType: GGUFValueType.UINT32,
      value,
    }),
    i32s: (k: string, value: number[]): GgufKv => ({
      key: key(k),
      type: GGUFValueType.ARRAY,
      subType: GGUFValueType.INT32,
      value,
    }),
    f32s: (k: string, value: number[]): GgufKv => ({
      key: key(k),
      type: GGUFValueType.ARRAY,
      subType: GGUFValueType.FLOAT32,
      value,
    }),
  }
}
export type ArchKeys = ReturnType<typeof archKeys>
