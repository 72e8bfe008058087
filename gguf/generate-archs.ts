// What a generated model holds per architecture: the tensors llama.cpp's loader creates
// (src/models/*.cpp: names, shapes) and the hyper-parameter keys it reads (src/llama-arch.cpp).
import { GGUFValueType } from '@huggingface/gguf'
import type { GeneratedType, PlannedTensor, RowQuantizer } from './generate-quant'
import type { GgufKv } from './reader'

export const GENERATED_ARCHS = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'mixtral', 'deepseek2', 'gpt-oss'] as const
export type GeneratedArch = (typeof GENERATED_ARCHS)[number]

/** Mixture-of-experts and attention variants; each applies to the architectures MOE_OPTIONS lists. */
export interface MoeOptions {
  readonly experts?: number
  readonly expertsUsed?: number
  /** Width of each expert's feed-forward (mixtral's experts are --ff wide). */
  readonly expertFf?: number
  readonly expertGroups?: number
  readonly groupsUsed?: number
  readonly sharedExperts?: number
  /** Leading blocks with a dense feed-forward instead of experts. */
  readonly denseBlocks?: number
  readonly qLoraRank?: number
  readonly kvLoraRank?: number
  /** Rotary and non-rotary parts of each MLA query/key head. */
  readonly ropeDim?: number
  readonly nopeDim?: number
  /** Keys an SWA layer attends to (gpt-oss: even layers use the window, odd layers see everything). */
  readonly slidingWindow?: number
}

export interface GenerateOptions extends MoeOptions {
  readonly arch: GeneratedArch
  readonly blocks: number
  readonly embd: number
  readonly heads: number
  /** deepseek2 ignores it: MLA caches one latent head. */
  readonly kvHeads: number
  readonly ff: number
  readonly vocab: number
  readonly type: GeneratedType
  readonly seed: number
  readonly out: string
  /** Omit output.weight: logits come from the token embedding (as small Qwen models do). */
  readonly tied?: boolean
  readonly contextLength?: number
  /** ggml's quantizer (native `quantizeRows`); the K-quant types need it. */
  readonly quantize?: RowQuantizer
}

export type MoeShape = Required<MoeOptions>

/** Every expert and attention option, in the order the CLI lists them. */
export const MOE_OPTION_KEYS: readonly (keyof MoeOptions)[] = [
  'experts',
  'expertsUsed',
  'expertFf',
  'expertGroups',
  'groupsUsed',
  'sharedExperts',
  'denseBlocks',
  'qLoraRank',
  'kvLoraRank',
  'ropeDim',
  'nopeDim',
  'slidingWindow',
]

/** The options each architecture takes, with the CLI flag that sets each. */
export const MOE_OPTIONS: Record<GeneratedArch, readonly (keyof MoeOptions)[]> = {
  llama: [],
  qwen2: [],
  qwen3: [],
  qwen3moe: ['experts', 'expertsUsed', 'expertFf'],
  mixtral: ['experts', 'expertsUsed'],
  // every option but the window
  deepseek2: MOE_OPTION_KEYS.filter((key) => key !== 'slidingWindow'),
  'gpt-oss': ['experts', 'expertsUsed', 'expertFf', 'slidingWindow'],
}

export function flagOf(option: keyof MoeOptions): string {
  return `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
}

/** The options with each architecture's defaults filled in (0 where an option does not apply). */
export function moeShape(o: GenerateOptions): MoeShape {
  const head = o.embd / o.heads
  const defaults: MoeShape = {
    experts: 8,
    expertsUsed: 2,
    expertFf: o.ff,
    expertGroups: 4,
    groupsUsed: 2,
    sharedExperts: 1,
    denseBlocks: 1,
    qLoraRank: Math.floor(o.embd / 2),
    kvLoraRank: Math.floor(o.embd / 4),
    ropeDim: Math.floor(head / 4) * 2,
    nopeDim: Math.floor(head),
    slidingWindow: 128,
  }
  const applies = MOE_OPTIONS[o.arch]
  const shape = { ...defaults }
  for (const key of MOE_OPTION_KEYS) shape[key] = applies.includes(key) ? (o[key] ?? defaults[key]) : 0
  if (o.arch === 'mixtral') shape.expertFf = o.ff
  return shape
}

/** One-line reasons the architecture's loader would refuse these options (its GGML_ASSERTs abort the process). */
export function archProblems(o: GenerateOptions, m: MoeShape): string[] {
  const problems: string[] = []
  for (const key of MOE_OPTION_KEYS) {
    const v = o[key]
    if (v === undefined) continue
    if (!MOE_OPTIONS[o.arch].includes(key))
      problems.push(`${flagOf(key)} does not apply to ${o.arch}; it takes ${MOE_OPTIONS[o.arch].map(flagOf).join(' ') || 'no expert options'}.`)
    else if (!Number.isSafeInteger(v) || v < 0) problems.push(`${flagOf(key)} must be a whole number, not ${v}.`)
  }
  if (problems.length > 0 || MOE_OPTIONS[o.arch].length === 0) return problems
  if (m.experts < 2 || m.experts > 1024) problems.push(`--experts must be 2 to 1024 (llama.cpp's LLAMA_MAX_EXPERTS), not ${m.experts}.`)
  if (m.expertsUsed < 1 || m.expertsUsed > m.experts) problems.push(`--experts-used must be 1 to --experts (${m.experts}), not ${m.expertsUsed}.`)
  if (m.expertFf < 1) problems.push(`--expert-ff must be above 0, not ${m.expertFf}.`)
  if (o.arch === 'deepseek2') problems.push(...deepseek2Problems(o, m))
  if (o.arch === 'gpt-oss' && m.slidingWindow < 1) problems.push(`--sliding-window must be above 0, not ${m.slidingWindow}.`)
  return problems
}

function deepseek2Problems(o: GenerateOptions, m: MoeShape): string[] {
  const problems: string[] = []
  // llama.cpp takes 26- and 27-block deepseek2 models for DeepSeek-V2-Lite: no q_lora, a plain attn_q.
  if (o.blocks === 26 || o.blocks === 27) problems.push(`--blocks ${o.blocks} makes llama.cpp read a DeepSeek-V2-Lite (no q_lora); choose another block count.`)
  if (o.blocks === 48 && o.vocab === 128256) problems.push('--blocks 48 with --vocab 128256 makes llama.cpp read a lite deepseek2 (no q_lora); change either.')
  if (m.denseBlocks >= o.blocks) problems.push(`--dense-blocks must be below --blocks (${o.blocks}) so some blocks have experts, not ${m.denseBlocks}.`)
  if (m.sharedExperts < 1)
    problems.push(`--shared-experts must be at least 1 (llama.cpp creates shared-expert tensors for every MoE block), not ${m.sharedExperts}.`)
  if (m.qLoraRank < 1 || m.kvLoraRank < 1) problems.push(`--q-lora-rank (${m.qLoraRank}) and --kv-lora-rank (${m.kvLoraRank}) must be above 0.`)
  if (m.ropeDim < 2 || m.ropeDim % 2 !== 0) problems.push(`--rope-dim must be even and at least 2, not ${m.ropeDim}.`)
  if (m.nopeDim < 1) problems.push(`--nope-dim must be at least 1 (the MLA key needs a non-rotary part), not ${m.nopeDim}.`)
  const g = m.expertGroups
  if (g > 1) {
    if (m.experts % g !== 0 || m.experts / g < 2) problems.push(`--experts (${m.experts}) must split into --expert-groups (${g}) of at least 2 experts each.`)
    else if (m.groupsUsed < 1 || m.groupsUsed >= g) problems.push(`--groups-used must be 1 to ${g - 1} (fewer than --expert-groups), not ${m.groupsUsed}.`)
    else if ((m.groupsUsed * m.experts) / g < m.expertsUsed)
      problems.push(`--groups-used ${m.groupsUsed} of ${g} groups hold ${(m.groupsUsed * m.experts) / g} experts, fewer than --experts-used ${m.expertsUsed}.`)
  } else if (o.groupsUsed !== undefined && o.groupsUsed !== 0) {
    problems.push(`--groups-used needs --expert-groups of 2 or more, not ${g}.`)
  }
  return problems
}

/**
 * The tensors llama.cpp's loader creates for the architecture, in block order, with the spread
 * of their random values: matrices 1/√fan-in; routers and heads wide enough that top-k choices
 * and greedy tokens are clear rather than near-ties.
 */
export function plannedTensors(o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  const a = o.arch
  const headDim = o.embd / o.heads
  const kvDim = headDim * o.kvHeads
  const uniform = (name: string, shape: number[], std: number): PlannedTensor => ({ name, shape, init: { kind: 'uniform', std } })
  const dense = (name: string, nIn: number, ...rest: number[]) => uniform(name, [nIn, ...rest], 1 / Math.sqrt(nIn))
  const norm = (name: string, n: number): PlannedTensor => ({ name, shape: [n], init: { kind: 'around-one', spread: 0.1 } })
  const bias = (name: string, ...shape: number[]) => uniform(name, shape, 0.1)
  // Logits with a spread of a few units, so greedy choices are clear rather than near-ties.
  const outputStd = 3.5 / Math.sqrt(o.embd)
  // Router logits a few units apart; sigmoid gating (deepseek2) saturates, so its logits stay nearer zero.
  const routerStd = (a === 'deepseek2' ? 2 : 4) / Math.sqrt(o.embd)
  const tensors: PlannedTensor[] = [uniform('token_embd.weight', [o.embd, o.vocab], o.tied ? outputStd : 1)]
  for (let i = 0; i < o.blocks; i++) {
    const b = `blk.${i}`
    tensors.push(norm(`${b}.attn_norm.weight`, o.embd))
    if (a === 'deepseek2') {
      const kHead = m.nopeDim + m.ropeDim
      tensors.push(norm(`${b}.attn_q_a_norm.weight`, m.qLoraRank), norm(`${b}.attn_kv_a_norm.weight`, m.kvLoraRank))
      tensors.push(dense(`${b}.attn_q_a.weight`, o.embd, m.qLoraRank), dense(`${b}.attn_q_b.weight`, m.qLoraRank, o.heads * kHead))
      tensors.push(dense(`${b}.attn_kv_a_mqa.weight`, o.embd, m.kvLoraRank + m.ropeDim))
      // MLA split the way convert_hf_to_gguf.py writes it: k_b transposed, per head
      tensors.push(dense(`${b}.attn_k_b.weight`, m.nopeDim, m.kvLoraRank, o.heads), dense(`${b}.attn_v_b.weight`, m.kvLoraRank, m.nopeDim, o.heads))
      tensors.push(dense(`${b}.attn_output.weight`, o.heads * m.nopeDim, o.embd))
    } else {
      tensors.push(dense(`${b}.attn_q.weight`, o.embd, o.embd), dense(`${b}.attn_k.weight`, o.embd, kvDim), dense(`${b}.attn_v.weight`, o.embd, kvDim))
      if (a === 'qwen2' || a === 'gpt-oss') tensors.push(bias(`${b}.attn_q.bias`, o.embd), bias(`${b}.attn_k.bias`, kvDim), bias(`${b}.attn_v.bias`, kvDim))
      if (a === 'qwen3' || a === 'qwen3moe') tensors.push(norm(`${b}.attn_q_norm.weight`, headDim), norm(`${b}.attn_k_norm.weight`, headDim))
      tensors.push(dense(`${b}.attn_output.weight`, o.embd, o.embd))
      if (a === 'gpt-oss') tensors.push(bias(`${b}.attn_output.bias`, o.embd), uniform(`${b}.attn_sinks.weight`, [o.heads], 1))
    }
    tensors.push(norm(`${b}.${a === 'gpt-oss' ? 'post_attention_norm' : 'ffn_norm'}.weight`, o.embd))
    if (m.experts === 0 || i < m.denseBlocks) {
      tensors.push(dense(`${b}.ffn_gate.weight`, o.embd, o.ff), dense(`${b}.ffn_down.weight`, o.ff, o.embd), dense(`${b}.ffn_up.weight`, o.embd, o.ff))
      continue
    }
    const [e, f] = [m.experts, m.expertFf]
    tensors.push(uniform(`${b}.ffn_gate_inp.weight`, [o.embd, e], routerStd))
    if (a === 'gpt-oss') tensors.push(bias(`${b}.ffn_gate_inp.bias`, e))
    if (a === 'deepseek2') tensors.push(uniform(`${b}.exp_probs_b.bias`, [e], 0.05))
    tensors.push(
      dense(`${b}.ffn_gate_exps.weight`, o.embd, f, e),
      dense(`${b}.ffn_down_exps.weight`, f, o.embd, e),
      dense(`${b}.ffn_up_exps.weight`, o.embd, f, e),
    )
    if (a === 'gpt-oss') tensors.push(bias(`${b}.ffn_gate_exps.bias`, f, e), bias(`${b}.ffn_down_exps.bias`, o.embd, e), bias(`${b}.ffn_up_exps.bias`, f, e))
    if (a === 'deepseek2') {
      const s = f * m.sharedExperts
      tensors.push(dense(`${b}.ffn_gate_shexp.weight`, o.embd, s), dense(`${b}.ffn_down_shexp.weight`, s, o.embd), dense(`${b}.ffn_up_shexp.weight`, o.embd, s))
    }
  }
  tensors.push(norm('output_norm.weight', o.embd))
  if (!o.tied) tensors.push(uniform('output.weight', [o.embd, o.vocab], outputStd))
  return tensors
}

/** The architecture's hyper-parameters under its GGUF prefix (mixtral is llama with experts, so its prefix is "llama"). */
export function archMetadata(o: GenerateOptions, m: MoeShape): GgufKv[] {
  const u32 = (key: string, value: number): GgufKv => ({ key: `${p}.${key}`, type: GGUFValueType.UINT32, value })
  const f32 = (key: string, value: number): GgufKv => ({ key: `${p}.${key}`, type: GGUFValueType.FLOAT32, value })
  const p = ggufArch(o.arch)
  const a = o.arch
  const headDim = o.embd / o.heads
  const mla = a === 'deepseek2'
  const kvs = [
    u32('context_length', o.contextLength ?? 4096),
    u32('embedding_length', o.embd),
    u32('feed_forward_length', o.ff),
    u32('block_count', o.blocks),
    u32('attention.head_count', o.heads),
    // MLA with the absorption llama.cpp runs is MQA over the compressed KV: one head, kv_lora + rope wide
    u32('attention.head_count_kv', mla ? 1 : o.kvHeads),
    u32('rope.dimension_count', mla ? m.ropeDim : headDim),
    f32('rope.freq_base', { llama: 1e4, mixtral: 1e6, deepseek2: 1e4, 'gpt-oss': 150_000, qwen2: 1e6, qwen3: 1e6, qwen3moe: 1e6 }[a]),
    f32('attention.layer_norm_rms_epsilon', a === 'llama' || a === 'mixtral' || a === 'gpt-oss' ? 1e-5 : 1e-6),
  ]
  if (m.experts > 0) kvs.push(u32('expert_count', m.experts), u32('expert_used_count', m.expertsUsed))
  if (a === 'qwen3moe' || a === 'deepseek2' || a === 'gpt-oss') kvs.push(u32('expert_feed_forward_length', m.expertFf))
  if (a === 'gpt-oss') kvs.push(u32('attention.key_length', headDim), u32('attention.value_length', headDim), u32('attention.sliding_window', m.slidingWindow))
  if (mla) {
    kvs.push(
      u32('attention.key_length', m.kvLoraRank + m.ropeDim),
      u32('attention.value_length', m.kvLoraRank),
      u32('attention.key_length_mla', m.nopeDim + m.ropeDim),
      u32('attention.value_length_mla', m.nopeDim),
      u32('attention.q_lora_rank', m.qLoraRank),
      u32('attention.kv_lora_rank', m.kvLoraRank),
      u32('leading_dense_block_count', m.denseBlocks),
      u32('expert_shared_count', m.sharedExperts),
      f32('expert_weights_scale', 2.5),
      { key: `${p}.expert_weights_norm`, type: GGUFValueType.BOOL, value: true },
      u32('expert_gating_func', 2), // sigmoid, as DeepSeek-V3
    )
    if (m.expertGroups > 1) kvs.push(u32('expert_group_count', m.expertGroups), u32('expert_group_used_count', m.groupsUsed))
  }
  return kvs
}

/** general.architecture: the name llama.cpp's LLM_ARCH_NAMES gives it. */
export function ggufArch(arch: GeneratedArch): string {
  return arch === 'mixtral' ? 'llama' : arch
}
