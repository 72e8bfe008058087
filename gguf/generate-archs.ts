// What a generated model holds per architecture: the tensors llama.cpp's loader creates
// (src/models/*.cpp: names, shapes) and the hyper-parameter keys it reads (src/llama-arch.cpp).
import { deepseek4Metadata, deepseek4Problems, deepseek4Tensors } from './generate-archs-deepseek4'
import { glmIndexer, isFullIndexer, mlaAttention, mlaMetadata, mlaProblems } from './generate-archs-mla'
import { qwen35moeMetadata, qwen35moeTensors, qwen35RopeDim } from './generate-archs-qwen35'
import {
  flagOf,
  type GeneratedArch,
  type GenerateOptions,
  MOE_OPTION_KEYS,
  MOE_OPTIONS,
  type MoeShape,
} from './generate-options'
import type { PlannedTensor } from './generate-quant'
import {
  archKeys,
  bias,
  dense,
  norm,
  outputStd,
  routedExperts,
  routerStd,
  sharedExpert,
  uniform,
} from './generate-tensors'
import type { GgufKv } from './reader'

export {
  flagOf,
  GENERATED_ARCHS,
  type GeneratedArch,
  type GenerateOptions,
  MOE_OPTION_KEYS,
  MOE_OPTIONS,
  type MoeOptions,
  type MoeShape,
  moeShape,
} from './generate-options'

/** One-line reasons the architecture's loader would refuse these options (its GGML_ASSERTs abort the process). */
export function archProblems(o: GenerateOptions, m: MoeShape): string[] {
  const problems: string[] = []
  for (const key of MOE_OPTION_KEYS) {
    const v = o[key]
    if (v === undefined) continue
    if (!MOE_OPTIONS[o.arch].includes(key))
      problems.push(
        `${flagOf(key)} does not apply to ${o.arch}; it takes ` +
          `${MOE_OPTIONS[o.arch].map(flagOf).join(' ') || 'no expert options'}.`,
      )
    else if (!Number.isSafeInteger(v) || v < 0) problems.push(`${flagOf(key)} must be a whole number, not ${v}.`)
  }
  if (o.compressRatios !== undefined && o.arch !== 'deepseek4')
    problems.push(`--compress-ratios applies to deepseek4 only, not ${o.arch}.`)
  // llama.cpp's create_tensor_gate_up_exps: only these families' loaders look for the fused tensor
  if (o.fusedGateUp === true && o.arch !== 'deepseek2' && o.arch !== 'qwen35moe')
    problems.push(
      `a fused ffn_gate_up_exps loads in deepseek2 and qwen35moe only (llama.cpp's loaders), not ${o.arch}.`,
    )
  if (problems.length > 0 || MOE_OPTIONS[o.arch].length === 0) return problems
  if (m.experts < 2 || m.experts > 1024)
    problems.push(`--experts must be 2 to 1024 (llama.cpp's LLAMA_MAX_EXPERTS), not ${m.experts}.`)
  if (m.expertsUsed < 1 || m.expertsUsed > m.experts)
    problems.push(`--experts-used must be 1 to --experts (${m.experts}), not ${m.expertsUsed}.`)
  if (m.expertFf < 1) problems.push(`--expert-ff must be above 0, not ${m.expertFf}.`)
  if (o.arch === 'deepseek2' || o.arch === 'glm-dsa') problems.push(...mlaProblems(o, m))
  if (o.arch === 'deepseek4') problems.push(...deepseek4Problems(o, m))
  if ((o.arch === 'gpt-oss' || o.arch === 'deepseek4') && m.slidingWindow < 1)
    problems.push(`--sliding-window must be above 0, not ${m.slidingWindow}.`)
  if (o.arch === 'qwen35moe' && (m.fullAttentionInterval < 1 || m.fullAttentionInterval > o.blocks))
    problems.push(
      `--full-attention-interval must be 1 to --blocks (${o.blocks}) so some block has full attention, not ` +
        `${m.fullAttentionInterval}.`,
    )
  return problems
}

/**
 * The tensors llama.cpp's loader creates for the architecture, in block order, with the spread
 * of their random values: matrices 1/√fan-in; routers and heads wide enough that top-k choices
 * and greedy tokens are clear rather than near-ties.
 */
export function plannedTensors(o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  if (o.arch === 'qwen35moe') return qwen35moeTensors(o, m)
  if (o.arch === 'deepseek4') return deepseek4Tensors(o, m)
  const a = o.arch
  const headDim = o.embd / o.heads
  const kvDim = headDim * o.kvHeads
  const mla = a === 'deepseek2' || a === 'glm-dsa'
  const tensors: PlannedTensor[] = [uniform('token_embd.weight', [o.embd, o.vocab], o.tied ? outputStd(o) : 1)]
  for (let i = 0; i < o.blocks; i++) {
    const b = `blk.${i}`
    tensors.push(norm(`${b}.attn_norm.weight`, o.embd))
    if (mla) {
      tensors.push(...mlaAttention(b, o, m))
      if (a === 'glm-dsa' && isFullIndexer(m, i)) tensors.push(...glmIndexer(b, o, m))
    } else {
      const qkvBias = o.qkvBias ?? (a === 'qwen2' || a === 'gpt-oss')
      if (o.fusedQkv === true) {
        tensors.push(dense(`${b}.attn_qkv.weight`, o.embd, o.embd + 2 * kvDim))
        if (qkvBias) tensors.push(bias(`${b}.attn_qkv.bias`, o.embd + 2 * kvDim))
      } else {
        tensors.push(
          dense(`${b}.attn_q.weight`, o.embd, o.embd),
          dense(`${b}.attn_k.weight`, o.embd, kvDim),
          dense(`${b}.attn_v.weight`, o.embd, kvDim),
        )
        if (qkvBias)
          tensors.push(
            bias(`${b}.attn_q.bias`, o.embd),
            bias(`${b}.attn_k.bias`, kvDim),
            bias(`${b}.attn_v.bias`, kvDim),
          )
      }
      if (a === 'qwen3' || a === 'qwen3moe')
        tensors.push(norm(`${b}.attn_q_norm.weight`, headDim), norm(`${b}.attn_k_norm.weight`, headDim))
      tensors.push(dense(`${b}.attn_output.weight`, o.embd, o.embd))
      if (a === 'gpt-oss')
        tensors.push(bias(`${b}.attn_output.bias`, o.embd), uniform(`${b}.attn_sinks.weight`, [o.heads], 1))
    }
    tensors.push(norm(`${b}.${a === 'gpt-oss' ? 'post_attention_norm' : 'ffn_norm'}.weight`, o.embd))
    if (m.experts === 0 || i < m.denseBlocks) {
      tensors.push(
        dense(`${b}.ffn_gate.weight`, o.embd, o.ff),
        dense(`${b}.ffn_down.weight`, o.ff, o.embd),
        dense(`${b}.ffn_up.weight`, o.embd, o.ff),
      )
      if (o.ffnBias === true)
        tensors.push(
          bias(`${b}.ffn_gate.bias`, o.ff),
          bias(`${b}.ffn_down.bias`, o.embd),
          bias(`${b}.ffn_up.bias`, o.ff),
        )
      continue
    }
    const [router, ...experts] = routedExperts(b, o.embd, m.expertFf, m.experts, routerStd(o), o.fusedGateUp)
    tensors.push(router as PlannedTensor)
    if (a === 'gpt-oss') tensors.push(bias(`${b}.ffn_gate_inp.bias`, m.experts))
    if (mla) tensors.push(uniform(`${b}.exp_probs_b.bias`, [m.experts], 0.05))
    tensors.push(...experts)
    if (a === 'gpt-oss') {
      const [e, f] = [m.experts, m.expertFf]
      tensors.push(
        bias(`${b}.ffn_gate_exps.bias`, f, e),
        bias(`${b}.ffn_down_exps.bias`, o.embd, e),
        bias(`${b}.ffn_up_exps.bias`, f, e),
      )
    }
    if (mla) tensors.push(...sharedExpert(b, o.embd, m.expertFf * m.sharedExperts))
  }
  tensors.push(norm('output_norm.weight', o.embd))
  if (!o.tied) tensors.push(uniform('output.weight', [o.embd, o.vocab], outputStd(o)))
  return tensors
}

/**
 * The architecture's hyper-parameters under its GGUF prefix (mixtral is llama with experts, so its prefix is "llama").
 */
export function archMetadata(o: GenerateOptions, m: MoeShape): GgufKv[] {
  const k = archKeys(ggufArch(o.arch))
  const a = o.arch
  const headDim = o.embd / o.heads
  const mla = a === 'deepseek2' || a === 'glm-dsa'
  const kvs = [
    k.u32('context_length', o.contextLength ?? 4096),
    k.u32('embedding_length', o.embd),
    k.u32('feed_forward_length', o.ff),
    k.u32('block_count', o.blocks),
    k.u32('attention.head_count', o.heads),
    // MLA with the absorption llama.cpp runs is MQA over the compressed
    // KV: one head, kv_lora + rope wide; deepseek4 has one KV head too
    k.u32('attention.head_count_kv', mla || a === 'deepseek4' ? 1 : o.kvHeads),
    k.u32(
      'rope.dimension_count',
      mla || a === 'deepseek4' ? m.ropeDim : a === 'qwen35moe' ? qwen35RopeDim(o) : headDim,
    ),
    k.f32('rope.freq_base', ROPE_BASE[a]),
    k.f32(
      'attention.layer_norm_rms_epsilon',
      a === 'llama' || a === 'mixtral' || a === 'gpt-oss' || a === 'glm-dsa' ? 1e-5 : 1e-6,
    ),
  ]
  if (m.experts > 0) kvs.push(k.u32('expert_count', m.experts), k.u32('expert_used_count', m.expertsUsed))
  if (a !== 'mixtral' && m.experts > 0) kvs.push(k.u32('expert_feed_forward_length', m.expertFf))
  if (a === 'gpt-oss')
    kvs.push(
      k.u32('attention.key_length', headDim),
      k.u32('attention.value_length', headDim),
      k.u32('attention.sliding_window', m.slidingWindow),
    )
  if (mla) kvs.push(...mlaMetadata(k, o, m))
  if (a === 'qwen35moe') kvs.push(...qwen35moeMetadata(k, o, m))
  if (a === 'deepseek4') kvs.push(...deepseek4Metadata(k, o, m))
  return kvs
}

const ROPE_BASE: Record<GeneratedArch, number> = {
  llama: 1e4,
  mixtral: 1e6,
  deepseek2: 1e4,
  'gpt-oss': 150_000,
  qwen2: 1e6,
  qwen3: 1e6,
  qwen3moe: 1e6,
  qwen35moe: 1e7,
  'glm-dsa': 1e6,
  deepseek4: 1e4,
}

/** general.architecture: the name llama.cpp's LLM_ARCH_NAMES gives it. */
export function ggufArch(arch: GeneratedArch): string {
  return arch === 'mixtral' ? 'llama' : arch
}
