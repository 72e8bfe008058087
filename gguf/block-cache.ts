// Each block's cache cost from a model's hyper-parameters, the way the native runtime sizes it.
import type { BlockCache } from '../protocol'

/** f16 keys and values. */
const BYTES_PER_VALUE = 2

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
}

/**
 * - deepseek2 with a kv_lora_rank caches one latent of kv_lora_rank + rope dimension values per token, keys
 *   only: V is read as a view of it (llama.cpp's deepseek2.cpp, and native/src/model.h `cache_k_values`).
 * - gpt-oss runs a sliding window on blocks il with il % pattern < pattern − 1 (pattern 2 by default: the even
 *   blocks), llama_hparams::set_swa_pattern; the other blocks attend to everything.
 * - Every other family caches K and V of n_head_kv heads.
 */
export function blockCaches(h: CacheHparams): BlockCache[] {
  return Array.from({ length: h.nLayer }, (_, il): BlockCache => {
    if (h.architecture === 'deepseek2' && (h.kvLoraRank ?? 0) > 0) {
      return { kind: 'latent', bytesPerToken: ((h.kvLoraRank ?? 0) + (h.ropeDim ?? 0)) * BYTES_PER_VALUE }
    }
    const bytesPerToken = h.nHeadKv(il) * (h.headDimK + h.headDimV) * BYTES_PER_VALUE
    if (h.architecture === 'gpt-oss' && (h.slidingWindow ?? 0) > 0 && isSlidingWindow(il, h.slidingWindowPattern ?? 2)) {
      return { kind: 'window', bytesPerToken, windowTokens: h.slidingWindow }
    }
    return { kind: 'kv', bytesPerToken }
  })
}

function isSlidingWindow(il: number, pattern: number | readonly boolean[]): boolean {
  if (typeof pattern !== 'number') return pattern[il] ?? false
  return pattern === 0 || il % pattern < pattern - 1
}
