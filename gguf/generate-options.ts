// The architectures gen-model writes and the options each takes, with their defaults; the
// tensors and keys per architecture live in generate-archs*.ts.

import type { GeneratedType, RowQuantizer } from './generate-quant'
import type { TokenizerMetadata } from './hf-tokenizer'

export const GENERATED_ARCHS = [
  'llama',
  'qwen2',
  'qwen3',
  'qwen3moe',
  'mixtral',
  'deepseek2',
  'gpt-oss',
  'qwen35moe',
  'glm-dsa',
  'deepseek4',
] as const
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
  /**
   * Keys an SWA layer attends to (gpt-oss: even layers use the
   * window, odd layers see everything; deepseek4: every block).
   */
  readonly slidingWindow?: number
  /** qwen35moe: every Nth block has full attention, the others gated delta-net linear attention. */
  readonly fullAttentionInterval?: number
  /** glm-dsa: blocks 0, N, 2N… run the lightning indexer; the rest reuse the last one's top-k. */
  readonly fullIndexerInterval?: number
  /** Lightning indexer (glm-dsa, deepseek4): heads, head size, keys each query keeps. */
  readonly indexerHeads?: number
  readonly indexerHeadSize?: number
  readonly indexerTopK?: number
  /** deepseek4: leading blocks that route by a token-id → experts table instead of the router. */
  readonly hashLayers?: number
  /** deepseek4: attention output in groups of heads, each projected to this rank first. */
  readonly outputGroups?: number
  readonly outputLoraRank?: number
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
  /** A real vocabulary and chat template (hfTokenizerMetadata) instead of the made-up one; `vocab` is its size. */
  readonly tokenizer?: TokenizerMetadata
  readonly type: GeneratedType
  readonly seed: number
  readonly out: string
  /** Omit output.weight: logits come from the token embedding (as small Qwen models do). */
  readonly tied?: boolean
  readonly contextLength?: number
  /** deepseek4: per block 0 (sliding window only), 4 (plus compressed keys and the indexer) or 128. */
  readonly compressRatios?: readonly number[]
  /** ggml's quantizer (native `quantizeRows`); the K-quant types need it. */
  readonly quantize?: RowQuantizer
  /** One attn_qkv matrix (and bias) instead of attn_q, attn_k and attn_v, as llama.cpp's create_tensor_qkv accepts. */
  readonly fusedQkv?: boolean
  /** Q, K and V biases (default: qwen2 and gpt-oss have them); llama.cpp loads them in every family where present. */
  readonly qkvBias?: boolean
  /** FFN gate, up and down biases on llama's dense blocks (llama.cpp's llama loader takes them where present). */
  readonly ffnBias?: boolean
  /**
   * One ffn_gate_up_exps tensor per MoE block instead of ffn_gate_exps and ffn_up_exps (deepseek2 and qwen35moe, as
   * llama.cpp's create_tensor_gate_up_exps accepts).
   */
  readonly fusedGateUp?: boolean
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
  'fullAttentionInterval',
  'fullIndexerInterval',
  'indexerHeads',
  'indexerHeadSize',
  'indexerTopK',
  'hashLayers',
  'outputGroups',
  'outputLoraRank',
]

/** The options each architecture takes, with the CLI flag that sets each. */
export const MOE_OPTIONS: Record<GeneratedArch, readonly (keyof MoeOptions)[]> = {
  llama: [],
  qwen2: [],
  qwen3: [],
  qwen3moe: ['experts', 'expertsUsed', 'expertFf'],
  mixtral: ['experts', 'expertsUsed'],
  // the options up to the first that is not deepseek2's (the window)
  deepseek2: MOE_OPTION_KEYS.slice(0, MOE_OPTION_KEYS.indexOf('slidingWindow')),
  'gpt-oss': ['experts', 'expertsUsed', 'expertFf', 'slidingWindow'],
  qwen35moe: ['experts', 'expertsUsed', 'expertFf', 'fullAttentionInterval'],
  'glm-dsa': [
    'experts',
    'expertsUsed',
    'expertFf',
    'sharedExperts',
    'denseBlocks',
    'qLoraRank',
    'kvLoraRank',
    'ropeDim',
    'nopeDim',
    'indexerHeads',
    'indexerHeadSize',
    'indexerTopK',
    'fullIndexerInterval',
  ],
  deepseek4: [
    'experts',
    'expertsUsed',
    'expertFf',
    'sharedExperts',
    'qLoraRank',
    'ropeDim',
    'slidingWindow',
    'hashLayers',
    'indexerHeads',
    'indexerHeadSize',
    'indexerTopK',
    'outputGroups',
    'outputLoraRank',
  ],
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
    fullAttentionInterval: 4,
    fullIndexerInterval: 2,
    indexerHeads: 4,
    indexerHeadSize: 64,
    indexerTopK: 8,
    hashLayers: 1,
    outputGroups: 2,
    outputLoraRank: Math.floor(o.embd / 4),
  }
  const applies = MOE_OPTIONS[o.arch]
  const shape = { ...defaults }
  for (const key of MOE_OPTION_KEYS) shape[key] = applies.includes(key) ? (o[key] ?? defaults[key]) : 0
  if (o.arch === 'mixtral') shape.expertFf = o.ff
  return shape
}
