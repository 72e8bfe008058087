// The large targets' tensors, caches and seams from their config.json (llama.cpp's src/models/deepseek4.cpp,
// glm-dsa.cpp and qwen35moe.cpp): what differs from the families config-tensors.ts already knows, only.
import { type CacheHparams, defaultIndexerFull } from './block-cache'
import type { SeamHparams } from './block-seams'
import { deepseekFfn, type HfConfig, mlaTensors, type TensorSpec } from './config-tensors'

/**
 * What a target family adds to the common sizing: its blocks' tensors, the head's extra tensors, cache and seam facts.
 */
export interface TargetFamily {
  blockTensors(il: number): TensorSpec[]
  readonly headTensors: readonly TensorSpec[]
  readonly cache: Partial<CacheHparams>
  readonly seams: Partial<SeamHparams>
}

/** The family of a target architecture, or undefined for the families config-tensors.ts sizes alone. */
export function targetFamily(architecture: string, c: HfConfig, nExpert: number): TargetFamily | undefined {
  if (architecture === 'deepseek4') return deepseek4(c, nExpert)
  if (architecture === 'glm-dsa') return glmDsa(c, nExpert)
  if (architecture === 'qwen35moe') return qwen35moe(c, nExpert)
  return undefined
}

const tensor =
  (il: number) =>
  (suffix: string, ...shape: number[]): TensorSpec => ({ name: `blk.${il}.${suffix}`, shape })

/** Routed experts (and the router) of block il, as every target lays them out. */
function experts(il: number, E: number, ff: number, nExpert: number): TensorSpec[] {
  const t = tensor(il)
  return [
    t('ffn_gate_inp.weight', E, nExpert),
    t('ffn_gate_exps.weight', E, ff, nExpert),
    t('ffn_up_exps.weight', E, ff, nExpert),
    t('ffn_down_exps.weight', ff, E, nExpert),
  ]
}

function sharedExpert(il: number, E: number, ff: number): TensorSpec[] {
  const t = tensor(il)
  return [t('ffn_gate_shexp.weight', E, ff), t('ffn_up_shexp.weight', E, ff), t('ffn_down_shexp.weight', ff, E)]
}

/**
 * DeepSeek-V4: one key head of head_dim (keys only), q and o through LoRA ranks (o in o_groups), hc_mult
 * hyper-connection streams mixed before attention and FFN, compressors and an indexer on compressed blocks, every block
 * MoE with one shared expert; the first num_hash_layers route experts by a token-id table instead of scores.
 */
function deepseek4(c: HfConfig, nExpert: number): TargetFamily {
  const E = c.hidden_size
  const H = c.num_attention_heads
  const hd = c.head_dim ?? E / H
  const qLora = c.q_lora_rank ?? 0
  const oGroups = c.o_groups ?? 1
  const oLora = c.o_lora_rank ?? 0
  const hc = c.hc_mult ?? 1
  const mix = (2 + hc) * hc
  const ff = c.moe_intermediate_size ?? c.intermediate_size
  const ihd = c.index_head_dim ?? 0
  const ih = c.index_n_heads ?? 0
  const ratios = c.compress_ratios ?? []
  return {
    blockTensors(il) {
      const t = tensor(il)
      const ratio = ratios[il] ?? 0
      const coff = ratio === 4 ? 2 : 1
      const compressor =
        ratio === 0
          ? []
          : [
              t('attn_compressor_kv.weight', E, coff * hd),
              t('attn_compressor_gate.weight', E, coff * hd),
              t('attn_compressor_ape.weight', coff * hd, ratio),
              t('attn_compressor_norm.weight', hd),
            ]
      const indexer =
        ratio === 4
          ? [
              t('indexer.proj.weight', E, ih),
              t('indexer.attn_q_b.weight', qLora, ih * ihd),
              t('indexer_compressor_kv.weight', E, 2 * ihd),
              t('indexer_compressor_gate.weight', E, 2 * ihd),
              t('indexer_compressor_ape.weight', 2 * ihd, ratio),
              t('indexer_compressor_norm.weight', ihd),
            ]
          : []
      const hash = il < (c.num_hash_layers ?? 0)
      return [
        t('attn_norm.weight', E),
        t('attn_sinks.weight', H),
        t('attn_q_a.weight', E, qLora),
        t('attn_q_a_norm.weight', qLora),
        t('attn_q_b.weight', qLora, H * hd),
        t('attn_kv.weight', E, hd),
        t('attn_kv_a_norm.weight', hd), // LLM_TENSOR_ATTN_KV_NORM's name in llama-arch.cpp
        t('attn_output_a.weight', (H * hd) / oGroups, oLora * oGroups),
        t('attn_output_b.weight', oGroups * oLora, E),
        ...['attn', 'ffn'].flatMap((at) => [
          t(`hc_${at}_fn.weight`, hc * E, mix),
          t(`hc_${at}_base.weight`, mix),
          t(`hc_${at}_scale.weight`, 3),
        ]),
        ...compressor,
        ...indexer,
        t('ffn_norm.weight', E),
        ...experts(il, E, ff, nExpert),
        hash ? t('ffn_gate_tid2eid.weight', c.num_experts_per_tok ?? 1, c.vocab_size) : t('exp_probs_b.bias', nExpert),
        ...sharedExpert(il, E, ff * (c.n_shared_experts ?? 1)),
      ]
    },
    // LLM_TENSOR_HC_HEAD_*: named output_hc_* in llama-arch.cpp
    headTensors: [
      { name: 'output_hc_fn.weight', shape: [hc * E, hc] },
      { name: 'output_hc_base.weight', shape: [hc] },
      { name: 'output_hc_scale.weight', shape: [1] },
    ],
    cache: {
      nHeadKv: () => 1,
      headDimK: hd,
      headDimV: 0,
      slidingWindow: c.sliding_window,
      compressRatios: ratios,
      indexerHeadDim: ihd,
    },
    seams: { hyperConnections: hc, hashLayers: c.num_hash_layers ?? 0 },
  }
}

/**
 * GLM-DSA: DeepSeek's MLA and MoE blocks plus a lightning indexer on
 * the "full" blocks; "shared" blocks reuse the last full block's top-k.
 */
function glmDsa(c: HfConfig, nExpert: number): TargetFamily {
  const E = c.hidden_size
  const ihd = c.index_head_dim ?? 0
  const ih = c.index_n_heads ?? 0
  const indexerFull = (il: number) => defaultIndexerFull(c.max_position_embeddings ?? 0, il)
  return {
    blockTensors(il) {
      const t = tensor(il)
      const dense = (ff: number) => [
        t('ffn_gate.weight', E, ff),
        t('ffn_up.weight', E, ff),
        t('ffn_down.weight', ff, E),
      ]
      const moe = (ff: number) => experts(il, E, ff, nExpert)
      const indexer = indexerFull(il)
        ? [
            t('indexer.k_norm.weight', ihd),
            t('indexer.k_norm.bias', ihd),
            t('indexer.proj.weight', E, ih),
            t('indexer.attn_k.weight', E, ihd),
            t('indexer.attn_q_b.weight', c.q_lora_rank ?? 0, ih * ihd),
          ]
        : []
      return [
        t('attn_norm.weight', E),
        t('ffn_norm.weight', E),
        ...mlaTensors(c, il),
        ...indexer,
        ...deepseekFfn(c, il, nExpert, dense, moe),
      ]
    },
    headTensors: [],
    cache: { kvLoraRank: c.kv_lora_rank, ropeDim: c.qk_rope_head_dim, indexerHeadDim: ihd, indexerFull },
    seams: { indexerFull, indexerTopK: c.index_topk },
  }
}

/**
 * Qwen3.5-MoE: gated delta-net linear attention on every block but each full_attention_interval-th (gated full
 * attention there), MoE with a gated shared expert. A linear block's state per session: the conv window of (kernel − 1)
 * × (2 key + value widths) plus one dk × dv matrix per value head, f32 (llama_hparams::n_embd_r / n_embd_s).
 */
function qwen35moe(c: HfConfig, nExpert: number): TargetFamily {
  const E = c.hidden_size
  const H = c.num_attention_heads
  const Hkv = c.num_key_value_heads ?? H
  const hd = c.head_dim ?? E / H
  const interval = c.full_attention_interval ?? 4
  const recurrent = (il: number) => (il + 1) % interval !== 0
  const dk = c.linear_key_head_dim ?? 128
  const dv = c.linear_value_head_dim ?? 128
  const nK = c.linear_num_key_heads ?? 16
  const nV = c.linear_num_value_heads ?? 32
  const kernel = c.linear_conv_kernel_dim ?? 4
  const keyDim = dk * nK
  const valueDim = dv * nV
  const convDim = 2 * keyDim + valueDim
  return {
    blockTensors(il) {
      const t = tensor(il)
      const attention = recurrent(il)
        ? [
            t('attn_qkv.weight', E, convDim),
            t('attn_gate.weight', E, valueDim),
            t('ssm_conv1d.weight', kernel, convDim),
            t('ssm_dt.bias', nV),
            t('ssm_a', nV),
            t('ssm_beta.weight', E, nV),
            t('ssm_alpha.weight', E, nV),
            t('ssm_norm.weight', dv),
            t('ssm_out.weight', valueDim, E),
          ]
        : [
            t('attn_q.weight', E, H * hd * 2),
            t('attn_k.weight', E, Hkv * hd),
            t('attn_v.weight', E, Hkv * hd),
            t('attn_output.weight', H * hd, E),
            t('attn_q_norm.weight', hd),
            t('attn_k_norm.weight', hd),
          ]
      return [
        t('attn_norm.weight', E),
        t('post_attention_norm.weight', E),
        ...attention,
        ...experts(il, E, c.moe_intermediate_size ?? c.intermediate_size, nExpert),
        t('ffn_gate_inp_shexp.weight', E),
        ...sharedExpert(il, E, c.shared_expert_intermediate_size ?? c.intermediate_size),
      ]
    },
    headTensors: [],
    cache: { recurrent, recurrentStateValues: (kernel - 1) * convDim + dk * dv * nV },
    seams: {},
  }
}
