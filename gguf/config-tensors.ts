// The tensors llama.cpp's converter writes for a model, from its Hugging Face config.json alone (no weights).
import { z } from 'zod'
import { MAX_BLOCKS } from '../protocol'

export interface TensorSpec {
  /** GGUF name, e.g. blk.3.ffn_down_exps.weight. */
  readonly name: string
  /** GGUF order: ne0 (the row length) first. */
  readonly shape: readonly number[]
}

const Int = z.number().int().positive()
/** The config.json fields the families below read; the rest is ignored. */
export const HfConfig = z
  .object({
    model_type: z.string(),
    hidden_size: Int,
    num_hidden_layers: Int,
    num_attention_heads: Int,
    num_key_value_heads: Int.optional(),
    head_dim: Int.optional(),
    intermediate_size: Int,
    vocab_size: Int,
    max_position_embeddings: Int.optional(),
    tie_word_embeddings: z.boolean().optional(),
    // mixture of experts: Qwen3-MoE and Mixtral (num_experts / num_local_experts), DeepSeek (n_routed_experts)
    num_experts: Int.optional(),
    num_local_experts: Int.optional(),
    moe_intermediate_size: Int.optional(),
    n_routed_experts: Int.optional(),
    n_shared_experts: Int.optional(),
    first_k_dense_replace: z.number().int().nonnegative().optional(),
    // MLA (DeepSeek-V2/V3)
    q_lora_rank: Int.nullable().optional(),
    kv_lora_rank: Int.optional(),
    qk_nope_head_dim: Int.optional(),
    qk_rope_head_dim: Int.optional(),
    v_head_dim: Int.optional(),
    num_experts_per_tok: Int.optional(),
    // DeepSeek-V4 (hyper-connections, compressed attention, hash-routed first blocks) and GLM-DSA (lightning indexer)
    o_lora_rank: Int.optional(),
    o_groups: Int.optional(),
    compress_ratios: z
      .array(z.union([z.literal(0), z.literal(4), z.literal(128)]))
      .max(MAX_BLOCKS)
      .optional(),
    index_n_heads: Int.optional(),
    index_head_dim: Int.optional(),
    index_topk: Int.optional(),
    hc_mult: Int.optional(),
    num_hash_layers: z.number().int().nonnegative().optional(),
    sliding_window: Int.optional(),
    // Qwen3.5 (gated delta net on all but every full_attention_interval-th block)
    full_attention_interval: Int.optional(),
    linear_conv_kernel_dim: Int.optional(),
    linear_key_head_dim: Int.optional(),
    linear_value_head_dim: Int.optional(),
    linear_num_key_heads: Int.optional(),
    linear_num_value_heads: Int.optional(),
    shared_expert_intermediate_size: Int.optional(),
  })
  .loose()
export type HfConfig = z.infer<typeof HfConfig>

/** The tensors of block il as llama.cpp's converter names and shapes them (GGUF order: row length first). */
export function blockTensors(architecture: string, c: HfConfig, il: number, nExpert: number): TensorSpec[] {
  const E = c.hidden_size
  const t = (suffix: string, ...shape: number[]): TensorSpec => ({ name: `blk.${il}.${suffix}`, shape })
  const norms = [t('attn_norm.weight', E), t('ffn_norm.weight', E)]
  const dense = (ff: number) => [t('ffn_gate.weight', E, ff), t('ffn_up.weight', E, ff), t('ffn_down.weight', ff, E)]
  const experts = (ff: number) => [
    t('ffn_gate_inp.weight', E, nExpert),
    t('ffn_gate_exps.weight', E, ff, nExpert),
    t('ffn_up_exps.weight', E, ff, nExpert),
    t('ffn_down_exps.weight', ff, E, nExpert),
  ]
  if (architecture === 'deepseek2')
    return [...norms, ...mlaTensors(c, il), ...deepseekFfn(c, il, nExpert, dense, experts)]
  const ffn = nExpert > 0 ? experts(c.moe_intermediate_size ?? c.intermediate_size) : dense(c.intermediate_size)
  const H = c.num_attention_heads
  const Hkv = c.num_key_value_heads ?? H
  const hd = c.head_dim ?? E / H
  const attention = [
    t('attn_q.weight', E, H * hd),
    t('attn_k.weight', E, Hkv * hd),
    t('attn_v.weight', E, Hkv * hd),
    t('attn_output.weight', H * hd, E),
  ]
  const extra =
    architecture === 'qwen2'
      ? [t('attn_q.bias', H * hd), t('attn_k.bias', Hkv * hd), t('attn_v.bias', Hkv * hd)]
      : architecture === 'qwen3' || architecture === 'qwen3moe'
        ? [t('attn_q_norm.weight', hd), t('attn_k_norm.weight', hd)]
        : []
  return [...norms, ...attention, ...extra, ...ffn]
}

/** MLA in the absorbed layout llama.cpp converts to (attn_k_b / attn_v_b per head; deepseek2.cpp). */
export function mlaTensors(c: HfConfig, il: number): TensorSpec[] {
  const t = (suffix: string, ...shape: number[]): TensorSpec => ({ name: `blk.${il}.${suffix}`, shape })
  const E = c.hidden_size
  const H = c.num_attention_heads
  const kvLora = c.kv_lora_rank ?? 0
  const rope = c.qk_rope_head_dim ?? 0
  const nope = c.qk_nope_head_dim ?? 0
  const vHead = c.v_head_dim ?? 0
  const qLora = c.q_lora_rank ?? 0
  const q =
    qLora > 0
      ? [
          t('attn_q_a_norm.weight', qLora),
          t('attn_q_a.weight', E, qLora),
          t('attn_q_b.weight', qLora, H * (nope + rope)),
        ]
      : [t('attn_q.weight', E, H * (nope + rope))]
  return [
    ...q,
    t('attn_kv_a_norm.weight', kvLora),
    t('attn_kv_a_mqa.weight', E, kvLora + rope),
    t('attn_k_b.weight', nope, kvLora, H),
    t('attn_v_b.weight', kvLora, vHead, H),
    t('attn_output.weight', H * vHead, E),
  ]
}

/** DeepSeek: the first blocks keep a dense FFN; the rest route to experts plus shared experts. */
export function deepseekFfn(
  c: HfConfig,
  il: number,
  nExpert: number,
  dense: (ff: number) => TensorSpec[],
  experts: (ff: number) => TensorSpec[],
): TensorSpec[] {
  if (il < (c.first_k_dense_replace ?? 0)) return dense(c.intermediate_size)
  const E = c.hidden_size
  const ff = c.moe_intermediate_size ?? c.intermediate_size
  const shared = ff * (c.n_shared_experts ?? 0)
  const t = (suffix: string, ...shape: number[]): TensorSpec => ({ name: `blk.${il}.${suffix}`, shape })
  return [
    ...experts(ff),
    t('exp_probs_b.bias', nExpert),
    ...(shared > 0
      ? [
          t('ffn_gate_shexp.weight', E, shared),
          t('ffn_up_shexp.weight', E, shared),
          t('ffn_down_shexp.weight', shared, E),
        ]
      : []),
  ]
}
