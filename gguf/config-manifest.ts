// A model's placement facts from its Hugging Face config.json alone: the tensors llama.cpp's converter
// would write, sized at Q4_K_M, and each block's cache. Plans hosts for a model before anyone downloads it.
import { z } from 'zod'
import { type BlockCache, type ManifestArtifact, NeuronError } from '../protocol'
import { blockCaches } from './block-cache'
import { chooseTypes } from './generate-quant'
import { tensorBytes } from './ggml-types'

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
  })
  .loose()
export type HfConfig = z.infer<typeof HfConfig>

export interface EstimatedTensor extends TensorSpec {
  readonly type: string
  readonly bytes: number
}

/** What a manifest would say of the model at Q4_K_M, without its weights, hashes or files. */
export interface ConfigEstimate {
  readonly name: string
  readonly architecture: string
  readonly nLayer: number
  readonly nEmbd: number
  readonly nVocab: number
  readonly contextLength: number
  readonly blocks: readonly (readonly EstimatedTensor[])[]
  readonly bytesPerBlock: readonly number[]
  readonly cachePerBlock: readonly BlockCache[]
  readonly kvBytesPerTokenPerBlock: number
  readonly embedBytes: number
  readonly headBytes: number
  /** One artifact per block plus the embed and head, as placement counts downloads (bytes only). */
  readonly artifacts: readonly Pick<ManifestArtifact, 'role' | 'blocks' | 'bytes'>[]
}

const ARCH: Record<string, string> = {
  llama: 'llama',
  mistral: 'llama',
  mixtral: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  qwen3_moe: 'qwen3moe',
  deepseek_v2: 'deepseek2',
  deepseek_v3: 'deepseek2',
}

/** Sizes a model from its config.json at Q4_K_M (llama-quantize's type mix, see quant-mix.ts). */
export function estimateFromConfig(json: unknown, name = 'model'): ConfigEstimate {
  const parsed = HfConfig.safeParse(json)
  if (!parsed.success) {
    throw new NeuronError('bad_config', `the config is not a Hugging Face config.json Neuron can size: ${parsed.error.issues[0]?.message ?? ''}`)
  }
  const c = parsed.data
  const architecture = ARCH[c.model_type]
  if (architecture === undefined) {
    throw new NeuronError('bad_config', `model_type ${c.model_type} is not one Neuron sizes from a config; supported: ${Object.keys(ARCH).join(', ')}`)
  }
  const nLayer = c.num_hidden_layers
  const nExpert = c.num_experts ?? c.num_local_experts ?? c.n_routed_experts ?? 0
  const tiedEmbeddings = c.tie_word_embeddings ?? false
  const E = c.hidden_size
  const embedSpecs: TensorSpec[] = [{ name: 'token_embd.weight', shape: [E, c.vocab_size] }]
  const headSpecs: TensorSpec[] = [{ name: 'output_norm.weight', shape: [E] }, ...(tiedEmbeddings ? [] : [{ name: 'output.weight', shape: [E, c.vocab_size] }])]
  const blockSpecs = Array.from({ length: nLayer }, (_, il) => blockTensors(architecture, c, il, nExpert))
  // llama-quantize's Q4_K_M mix, as the generator writes it; the values' spread (init) plays no part in the types.
  const typed = chooseTypes(
    [...embedSpecs, ...headSpecs, ...blockSpecs.flat()].map((t) => ({ ...t, init: { kind: 'uniform', std: 0 } as const })),
    'q4_K_M',
    nExpert,
    nLayer,
  )
  const sizes = new Map(
    typed.map((t) => {
      const bytes = tensorBytes(t.type, t.shape)
      if (bytes === undefined) throw new Error(`${t.name}: rows of ${t.shape[0]} do not fill ${t.type.name} blocks`)
      return [t.name, { name: t.name, shape: t.shape, type: t.type.name, bytes }]
    }),
  )
  const sized = (t: TensorSpec): EstimatedTensor => sizes.get(t.name) as EstimatedTensor
  const embed = embedSpecs.map(sized)
  const head = headSpecs.map(sized)
  const blocks = blockSpecs.map((b) => b.map(sized))
  const bytesPerBlock = blocks.map((b) => b.reduce((s, t) => s + t.bytes, 0))
  const headDim = c.head_dim ?? E / c.num_attention_heads
  const cachePerBlock = blockCaches({
    architecture,
    nLayer,
    nHeadKv: () => c.num_key_value_heads ?? c.num_attention_heads,
    headDimK: headDim,
    headDimV: headDim,
    kvLoraRank: c.kv_lora_rank,
    ropeDim: c.qk_rope_head_dim,
  })
  const sum = (ts: readonly EstimatedTensor[]) => ts.reduce((s, t) => s + t.bytes, 0)
  const embedBytes = sum(embed)
  const headBytes = sum(head)
  return {
    name,
    architecture,
    nLayer,
    nEmbd: E,
    nVocab: c.vocab_size,
    contextLength: c.max_position_embeddings ?? 0,
    blocks,
    bytesPerBlock,
    cachePerBlock,
    kvBytesPerTokenPerBlock: Math.max(...cachePerBlock.map((x) => x.bytesPerToken)),
    embedBytes,
    headBytes,
    artifacts: [
      { role: 'embed', blocks: null, bytes: embedBytes },
      ...bytesPerBlock.map((bytes, b) => ({ role: 'blocks' as const, blocks: [b, b + 1] as [number, number], bytes })),
      { role: 'head', blocks: null, bytes: headBytes },
    ],
  }
}

/** The tensors of block il as llama.cpp's converter names and shapes them (GGUF order: row length first). */
function blockTensors(architecture: string, c: HfConfig, il: number, nExpert: number): TensorSpec[] {
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
  if (architecture === 'deepseek2') return [...norms, ...mlaTensors(c, il), ...deepseekFfn(c, il, nExpert, dense, experts)]
  const ffn = nExpert > 0 ? experts(c.moe_intermediate_size ?? c.intermediate_size) : dense(c.intermediate_size)
  const H = c.num_attention_heads
  const Hkv = c.num_key_value_heads ?? H
  const hd = c.head_dim ?? E / H
  const attention = [t('attn_q.weight', E, H * hd), t('attn_k.weight', E, Hkv * hd), t('attn_v.weight', E, Hkv * hd), t('attn_output.weight', H * hd, E)]
  const extra =
    architecture === 'qwen2'
      ? [t('attn_q.bias', H * hd), t('attn_k.bias', Hkv * hd), t('attn_v.bias', Hkv * hd)]
      : architecture === 'qwen3' || architecture === 'qwen3moe'
        ? [t('attn_q_norm.weight', hd), t('attn_k_norm.weight', hd)]
        : []
  return [...norms, ...attention, ...extra, ...ffn]
}

/** MLA in the absorbed layout llama.cpp converts to (attn_k_b / attn_v_b per head; deepseek2.cpp). */
function mlaTensors(c: HfConfig, il: number): TensorSpec[] {
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
      ? [t('attn_q_a_norm.weight', qLora), t('attn_q_a.weight', E, qLora), t('attn_q_b.weight', qLora, H * (nope + rope))]
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
function deepseekFfn(c: HfConfig, il: number, nExpert: number, dense: (ff: number) => TensorSpec[], experts: (ff: number) => TensorSpec[]): TensorSpec[] {
  if (il < (c.first_k_dense_replace ?? 0)) return dense(c.intermediate_size)
  const E = c.hidden_size
  const ff = c.moe_intermediate_size ?? c.intermediate_size
  const shared = ff * (c.n_shared_experts ?? 0)
  const t = (suffix: string, ...shape: number[]): TensorSpec => ({ name: `blk.${il}.${suffix}`, shape })
  return [
    ...experts(ff),
    t('exp_probs_b.bias', nExpert),
    ...(shared > 0 ? [t('ffn_gate_shexp.weight', E, shared), t('ffn_up_shexp.weight', E, shared), t('ffn_down_shexp.weight', shared, E)] : []),
  ]
}
