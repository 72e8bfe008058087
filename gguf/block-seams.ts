// What crosses each block boundary, from a model's hyper-parameters (protocol/seams.ts says what the fields mean).
import type { Seam } from '../protocol'

/** The hyper-parameters a seam depends on, whether read from GGUF metadata or a Hugging Face config. */
export interface SeamHparams {
  readonly architecture: string
  readonly nLayer: number
  readonly nEmbd: number
  /** DeepSeek-V4: hyper-connection streams, and the first blocks that route experts by token id. */
  readonly hyperConnections?: number | undefined
  readonly hashLayers?: number | undefined
  /** GLM-DSA: whether block il runs its own indexer, and the top-k indices a shared block reuses. */
  readonly indexerFull?: ((il: number) => boolean) | undefined
  readonly indexerTopK?: number | undefined
}

/**
 * Boundary b (after block b − 1), for b = 1..nLayer − 1:
 * - deepseek4 carries hc_mult streams of the hidden state (llama.cpp's n_embd_out = hc_mult × n_embd), and the token
 *   ids while block b is one of the first hash_layer_count blocks, whose experts come from a table indexed by token id;
 * - glm-dsa carries, before a shared-indexer block, the top-k indices of the last full block before it (glm-dsa.cpp's
 *   prev_top_k), indexer_top_k int32 per token. Cutting only before full blocks would leave ranges of 4 blocks of
 *   ~6 GB, more than a 12 GB host holds, so the indices cross instead;
 * - every other family carries the hidden state alone. Every cut is allowed.
 */
export function blockSeams(h: SeamHparams): Seam[] {
  return Array.from({ length: h.nLayer - 1 }, (_, i): Seam => {
    const b = i + 1
    const seam: Seam = { cut: true, values: h.nEmbd, tokenIds: false, int32PerToken: 0 }
    if (h.architecture === 'deepseek4')
      return { ...seam, values: h.nEmbd * (h.hyperConnections ?? 1), tokenIds: b < (h.hashLayers ?? 0) }
    if (h.architecture === 'glm-dsa' && h.indexerFull?.(b) === false)
      return { ...seam, int32PerToken: h.indexerTopK ?? 0 }
    return seam
  })
}
