// Each block's cache cost from a model's hyper-parameters, the way the native runtime sizes it.
import type { BlockCache } from '../protocol'

/** f16 keys and values. */
const BYTES_PER_VALUE = 2
/** Recurrent and compressor state is f32. */
const BYTES_PER_STATE = 4

/** The hyper-parameters a block's cache depends on, whether read from GGUF metadata or a Hugging Face config. */
export interface CacheHparams {
  readonly architecture: string
  readonly nLayer: number
  /** KV heads of block il (some models vary it per block). */
  readonly nHeadKv: (il: number) => number
  readonly headDimK: number
  readonly headDimV: number
  /** MLA (deepseek2): the compressed latent's width and the rope part cached beside it. */
  readonly kvLoraRank?: number | undefined
  readonly ropeDim?: number | undefined
  /** Sliding-window attention (gpt-oss): the window in tokens, and which blocks use it. */
  readonly slidingWindow?: number | undefined
  readonly slidingWindowPattern?: number | readonly boolean[] | undefined
  /** DeepSeek-V4: each block's compression ratio (0, 4 or 128) and its lightning indexer's key width. */
  readonly compressRatios?: readonly number[] | undefined
  readonly indexerHeadDim?: number | undefined
  /** GLM-DSA: whether block il runs its own indexer (and caches its keys) or reuses the last full block's top-k. */
  readonly indexerFull?: ((il: number) => boolean) | undefined
  /** Qwen3.5 (gated delta net): whether block il is linear attention, and its fixed state's f32 values per session. */
  readonly recurrent?: ((il: number) => boolean) | undefined
  readonly recurrentStateValues?: number | undefined
}

/**
 * - deepseek2 with a kv_lora_rank caches one latent of kv_lora_rank + rope dimension values per token, keys
 *   only: V is read as a view of it (llama.cpp's deepseek2.cpp, and native/src/model.h `cache_k_values`).
 * - gpt-oss runs a sliding window on blocks il with il % pattern < pattern − 1 (pattern 2 by default: the even
 *   blocks), llama_hparams::set_swa_pattern; the other blocks attend to everything.
 * - deepseek4 caches one key of head_dim per token (keys only), of the last sliding_window tokens on every block,
 *   plus on blocks of ratio r one compressed key per r tokens, and at r = 4 one indexer key per 4 tokens; its
 *   compressors keep f32 kv and score rows per session (llama-kv-cache-dsv4.cpp: 2r × 2·head_dim at r = 4, and
 *   2r × 2·indexer_dim for the indexer; r × head_dim at r = 128). Compressed caches' padding to 256 rows is left out.
 * - glm-dsa caches deepseek2's latent on every block, plus one indexer key per token on the full-indexer blocks.
 * - qwen35moe's linear-attention blocks keep only fixed f32 state
 * per session (conv + delta-net state), the others K and V.
 * - Every other family caches K and V of n_head_kv heads.
 */
export function blockCaches(h: CacheHparams): BlockCache[] {
  return Array.from({ length: h.nLayer }, (_, il): BlockCache => {
    const latent = ((h.kvLoraRank ?? 0) + (h.ropeDim ?? 0)) * BYTES_PER_VALUE
    if (h.architecture === 'deepseek2' && (h.kvLoraRank ?? 0) > 0) return { kind: 'latent', bytesPerToken: latent }
    if (h.architecture === 'glm-dsa') {
      return {
        kind: 'latent',
        bytesPerToken: latent + (h.indexerFull?.(il) === true ? (h.indexerHeadDim ?? 0) * BYTES_PER_VALUE : 0),
      }
    }
    if (h.architecture === 'deepseek4') return deepseek4Cache(h, il)
    if (h.architecture === 'qwen35moe' && h.recurrent?.(il) === true) {
      return { kind: 'kv', bytesPerToken: 0, fixedBytes: (h.recurrentStateValues ?? 0) * BYTES_PER_STATE }
    }
    const bytesPerToken = h.nHeadKv(il) * (h.headDimK + h.headDimV) * BYTES_PER_VALUE
    if (
      h.architecture === 'gpt-oss' &&
      (h.slidingWindow ?? 0) > 0 &&
      isSlidingWindow(il, h.slidingWindowPattern ?? 2)
    ) {
      return { kind: 'window', bytesPerToken, windowTokens: h.slidingWindow }
    }
    return { kind: 'kv', bytesPerToken }
  })
}

function isSlidingWindow(il: number, pattern: number | readonly boolean[]): boolean {
  if (typeof pattern !== 'number') return pattern[il] ?? false
  return pattern === 0 || il % pattern < pattern - 1
}

function deepseek4Cache(h: CacheHparams, il: number): BlockCache {
  const key = h.headDimK * BYTES_PER_VALUE
  const window = h.slidingWindow ?? 0
  const ratio = h.compressRatios?.[il] ?? 0
  if (ratio === 0) return { kind: 'window', bytesPerToken: key, windowTokens: window }
  const indexer = (h.indexerHeadDim ?? 0) * BYTES_PER_VALUE
  const rows = (width: number) => 2 * (ratio === 4 ? 2 * ratio * 2 * width : ratio * width) * BYTES_PER_STATE
  return {
    kind: 'latent',
    bytesPerToken: Math.ceil((key + (ratio === 4 ? indexer : 0)) / ratio),
    recent: { bytesPerToken: key, windowTokens: window },
    fixedBytes: rows(h.headDimK) + (ratio === 4 ? rows(h.indexerHeadDim ?? 0) : 0),
  }
}

/** Entries in llama.cpp's GLM_5_2_DEFAULT_INDEXER_TYPES (GLM-5.2's 78 blocks); the blocks past it are shared. */
const GLM_5_2_DEFAULT_BLOCKS = 78

/**
 * GLM-DSA's full-indexer blocks when the model names none (llama.cpp's glm-dsa.cpp): a 1M-context model (GLM-5.2) runs
 * its own indexer on blocks 0, 1 and every fourth from 2 up to block 77 (GLM_5_2_DEFAULT_INDEXER_TYPES; the
 * std::array's later entries are zero), an older one (GLM-5, 5.1) on every block.
 */
export function defaultIndexerFull(contextLength: number, il: number): boolean {
  return contextLength < 1_048_576 || (il < GLM_5_2_DEFAULT_BLOCKS && (il < 2 || (il - 2) % 4 === 0))
}
