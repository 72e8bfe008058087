// qwen35moe (llama.cpp src/models/qwen35moe.cpp): gated delta-net linear attention on most blocks,
// gated full attention on every --full-attention-interval-th, routed experts plus a gated shared expert.
// The delta-net heads follow --heads (values) and --kv-heads (keys), each head --embd/--heads wide.
import type { GenerateOptions, MoeShape } from './generate-options'
import type { PlannedTensor } from './generate-quant'
import {
  type ArchKeys,
  dense,
  norm,
  outputStd,
  routedExperts,
  routerStd,
  sharedExpert,
  uniform,
} from './generate-tensors'
import type { GgufKv } from './reader'

/** llama.cpp's rule: block i attends fully when (i + 1) is a multiple of the interval. */
export const isFullAttention = (m: MoeShape, block: number): boolean => (block + 1) % m.fullAttentionInterval === 0

/** Partial rotary, as Qwen3.5 (a quarter of each head, even). */
export const qwen35RopeDim = (o: GenerateOptions): number => Math.max(2, Math.floor(o.embd / o.heads / 8) * 2)

/** The conv kernel's width (ssm.conv_kernel), as Qwen3.5. */
const CONV_KERNEL = 4

export function qwen35moeTensors(o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  const head = o.embd / o.heads
  const [keyDim, valueDim] = [head * o.kvHeads, head * o.heads]
  const tensors: PlannedTensor[] = [uniform('token_embd.weight', [o.embd, o.vocab], o.tied ? outputStd(o) : 1)]
  for (let i = 0; i < o.blocks; i++) {
    const b = `blk.${i}`
    tensors.push(norm(`${b}.attn_norm.weight`, o.embd), norm(`${b}.post_attention_norm.weight`, o.embd))
    if (isFullAttention(m, i)) {
      // the query projection holds the query and its output gate, head by head
      tensors.push(
        dense(`${b}.attn_q.weight`, o.embd, 2 * o.embd),
        dense(`${b}.attn_k.weight`, o.embd, keyDim),
        dense(`${b}.attn_v.weight`, o.embd, keyDim),
      )
      tensors.push(
        dense(`${b}.attn_output.weight`, o.embd, o.embd),
        norm(`${b}.attn_q_norm.weight`, head),
        norm(`${b}.attn_k_norm.weight`, head),
      )
    } else {
      tensors.push(
        dense(`${b}.attn_qkv.weight`, o.embd, 2 * keyDim + valueDim),
        dense(`${b}.attn_gate.weight`, o.embd, valueDim),
        dense(`${b}.ssm_conv1d.weight`, CONV_KERNEL, 2 * keyDim + valueDim),
        uniform(`${b}.ssm_dt.bias`, [o.heads], 0.5, 1),
        // -exp(A_log): negative, so each step's decay exp(softplus(·) · a) stays below one
        uniform(`${b}.ssm_a`, [o.heads], 0.3, -1),
        dense(`${b}.ssm_beta.weight`, o.embd, o.heads),
        dense(`${b}.ssm_alpha.weight`, o.embd, o.heads),
        norm(`${b}.ssm_norm.weight`, head),
        dense(`${b}.ssm_out.weight`, valueDim, o.embd),
      )
    }
    tensors.push(...routedExperts(b, o.embd, m.expertFf, m.experts, routerStd(o), o.fusedGateUp))
    // the shared expert is --ff wide and scaled by sigmoid(ffn_gate_inp_shexp · x)
    tensors.push(
      uniform(`${b}.ffn_gate_inp_shexp.weight`, [o.embd], 1 / Math.sqrt(o.embd)),
      ...sharedExpert(b, o.embd, o.ff),
    )
  }
  tensors.push(norm('output_norm.weight', o.embd))
  if (!o.tied) tensors.push(uniform('output.weight', [o.embd, o.vocab], outputStd(o)))
  return tensors
}

export function qwen35moeMetadata(k: ArchKeys, o: GenerateOptions, m: MoeShape): GgufKv[] {
  const head = o.embd / o.heads
  // interleaved M-RoPE sections over the rotary pairs; text positions are equal in each section
  const pairs = qwen35RopeDim(o) / 2
  const t = Math.ceil(pairs / 3)
  const h = Math.ceil((pairs - t) / 2)
  return [
    k.u32('expert_shared_feed_forward_length', o.ff),
    k.i32s('rope.dimension_sections', [t, h, pairs - t - h, 0]),
    k.u32('full_attention_interval', m.fullAttentionInterval),
    k.u32('ssm.conv_kernel', CONV_KERNEL),
    k.u32('ssm.inner_size', head * o.heads),
    k.u32('ssm.state_size', head),
    k.u32('ssm.time_step_rank', o.heads),
    k.u32('ssm.group_count', o.kvHeads),
  ]
}
