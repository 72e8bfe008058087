// A model's placement facts from its Hugging Face config.json alone: the tensors llama.cpp's converter
// would write, sized at Q4_K_M, and each block's cache. Plans hosts for a model before anyone downloads it.
import { type BlockCache, type ManifestArtifact, NeuronError, type Seam, tokenCacheBytes } from '../protocol'
import { blockCaches } from './block-cache'
import { blockSeams } from './block-seams'
import { targetFamily } from './config-targets'
import { blockTensors, HfConfig, type TensorSpec } from './config-tensors'
import { chooseTypes } from './generate-quant'
import { tensorBytes } from './ggml-types'

export { HfConfig, type TensorSpec } from './config-tensors'

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
  /** What crosses each boundary 1..nLayer − 1 and whether a route may cut there. */
  readonly seams: readonly Seam[]
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
  deepseek_v4: 'deepseek4',
  glm_moe_dsa: 'glm-dsa',
  qwen3_5_moe: 'qwen35moe',
  qwen3_5_moe_text: 'qwen35moe',
}

/** Sizes a model from its config.json at Q4_K_M (llama-quantize's type mix, see quant-mix.ts). */
export function estimateFromConfig(json: unknown, name = 'model'): ConfigEstimate {
  const parsed = HfConfig.safeParse(json)
  if (!parsed.success) {
    throw new NeuronError(
      'bad_config',
      `the config is not a Hugging Face config.json Neuron can size: ${parsed.error.issues[0]?.message ?? ''}`,
    )
  }
  const c = parsed.data
  const architecture = ARCH[c.model_type]
  if (architecture === undefined) {
    throw new NeuronError(
      'bad_config',
      `model_type ${c.model_type} is not one Neuron sizes from a config; supported: ${Object.keys(ARCH).join(', ')}`,
    )
  }
  const nLayer = c.num_hidden_layers
  const nExpert = c.num_experts ?? c.num_local_experts ?? c.n_routed_experts ?? 0
  const tiedEmbeddings = c.tie_word_embeddings ?? false
  const E = c.hidden_size
  const embedSpecs: TensorSpec[] = [{ name: 'token_embd.weight', shape: [E, c.vocab_size] }]
  const family = targetFamily(architecture, c, nExpert)
  const headSpecs: TensorSpec[] = [
    { name: 'output_norm.weight', shape: [E] },
    ...(tiedEmbeddings ? [] : [{ name: 'output.weight', shape: [E, c.vocab_size] }]),
    ...(family?.headTensors ?? []),
  ]
  const blockSpecs = Array.from(
    { length: nLayer },
    (_, il) => family?.blockTensors(il) ?? blockTensors(architecture, c, il, nExpert),
  )
  // llama-quantize's Q4_K_M mix, as the generator writes it; the values' spread (init) plays no part in the types.
  const typed = chooseTypes(
    [...embedSpecs, ...headSpecs, ...blockSpecs.flat()].map((t) => ({
      ...t,
      init: { kind: 'uniform', std: 0 } as const,
    })),
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
    ...family?.cache,
  })
  const seams = blockSeams({ architecture, nLayer, nEmbd: E, ...family?.seams })
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
    seams,
    kvBytesPerTokenPerBlock: Math.max(...cachePerBlock.map(tokenCacheBytes)),
    embedBytes,
    headBytes,
    artifacts: [
      { role: 'embed', blocks: null, bytes: embedBytes },
      ...bytesPerBlock.map((bytes, b) => ({ role: 'blocks' as const, blocks: [b, b + 1] as [number, number], bytes })),
      { role: 'head', blocks: null, bytes: headBytes },
    ],
  }
}
