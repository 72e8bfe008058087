// What one block's cache costs a host: the single home of "cache bytes for block i at T tokens".
import { z } from 'zod'

/**
 * How a block's cache grows with the tokens it has seen:
 * - `kv`: keys and values of every token (ordinary attention);
 * - `latent`: one compressed latent per token, keys only (MLA: kv_lora_rank + rope dimension);
 * - `window`: keys and values of at most `windowTokens` recent tokens per session (sliding-window attention).
 * `recent` is a sliding window kept beside a growing cache (DeepSeek-V4: raw keys of the last 128 tokens beside its
 * compressed rows, whose `latent` bytes per token are the compressed row's bytes over the compression ratio).
 * `fixedBytes` is state a session holds whatever its length (recurrent or compressor state), per session.
 */
export const BlockCache = z
  .object({
    kind: z.enum(['kv', 'latent', 'window']),
    /** Bytes one token adds, at f16. */
    bytesPerToken: z.number().int().nonnegative(),
    /** `window` only: the tokens a session's cache keeps at most (the attention's sliding window). */
    windowTokens: z.number().int().positive().optional(),
    recent: z
      .object({ bytesPerToken: z.number().int().nonnegative(), windowTokens: z.number().int().positive() })
      .optional(),
    fixedBytes: z.number().int().nonnegative().optional(),
  })
  .refine((c) => (c.kind === 'window') === (c.windowTokens !== undefined), {
    message: 'a window cache states windowTokens; kv and latent caches state none',
  })
  .refine((c) => c.kind !== 'window' || c.recent === undefined, {
    message: 'a window cache is all recent tokens: it states no second window',
  })
export type BlockCache = z.infer<typeof BlockCache>

/** Tokens a host sizes its cache for, spread over this many sessions (a window caps each session). */
export interface CacheBudget {
  readonly tokens: number
  readonly sessions: number
}

/**
 * Positions a session's window cache holds beyond the window: the native runtime keeps a ring of
 * window + 512 cells rounded up to 256 (native/src/kv_cache.h, SWA_SLACK), so a forward pass may add
 * up to 512 positions (longer inputs go through in slices, as llama.cpp's ubatches do) and roll back
 * as far.
 */
export const WINDOW_SLACK_TOKENS = 512

/** Cells one session's window cache keeps: its ring, or all its positions when that is fewer. */
export function windowCells(windowTokens: number, sessionTokens: number): number {
  return Math.min(sessionTokens, Math.ceil((windowTokens + WINDOW_SLACK_TOKENS) / 256) * 256)
}

/** A manifest's cache facts; older manifests carry only `kvBytesPerTokenPerBlock`. */
export interface CacheFacts {
  readonly nLayer: number
  readonly kvBytesPerTokenPerBlock: number
  readonly cachePerBlock?: readonly BlockCache[] | undefined
}

/** The cache of every block; a manifest from before `cachePerBlock` means plain KV of its one figure. */
export function cachePerBlock(model: CacheFacts): readonly BlockCache[] {
  return (
    model.cachePerBlock ??
    Array.from({ length: model.nLayer }, () => ({ kind: 'kv' as const, bytesPerToken: model.kvBytesPerTokenPerBlock }))
  )
}

/** Tokens a block's cache holds when the budget is full. */
function cachedTokens(cache: BlockCache, budget: CacheBudget): number {
  if (cache.kind !== 'window' || cache.windowTokens === undefined) return budget.tokens
  return budget.sessions * windowCells(cache.windowTokens, Math.ceil(budget.tokens / budget.sessions))
}

/** Bytes one block's cache takes at this budget. */
export function blockCacheBytes(cache: BlockCache, budget: CacheBudget): number {
  const recent =
    cache.recent === undefined
      ? 0
      : cache.recent.bytesPerToken *
        budget.sessions *
        windowCells(cache.recent.windowTokens, Math.ceil(budget.tokens / budget.sessions))
  return cache.bytesPerToken * cachedTokens(cache, budget) + recent + (cache.fixedBytes ?? 0) * budget.sessions
}

/** Bytes one token adds to a block's cache while no window is full. */
export function tokenCacheBytes(cache: BlockCache): number {
  return cache.bytesPerToken + (cache.recent?.bytesPerToken ?? 0)
}

/** Bytes the cache of blocks [a, b) takes at this budget. */
export function rangeCacheBytes(model: CacheFacts, blocks: readonly [number, number], budget: CacheBudget): number {
  let bytes = 0
  for (const cache of cachePerBlock(model).slice(blocks[0], blocks[1])) bytes += blockCacheBytes(cache, budget)
  return bytes
}

/** Blocks grouped by equal cache, in order of first appearance (gpt-oss alternates two kinds). */
export function cacheGroups(caches: readonly BlockCache[]): { blocks: number[]; cache: BlockCache }[] {
  const groups: { blocks: number[]; cache: BlockCache }[] = []
  caches.forEach((cache, b) => {
    const group = groups.find((g) => sameCache(g.cache, cache))
    if (group === undefined) groups.push({ blocks: [b], cache })
    else group.blocks.push(b)
  })
  return groups
}

function sameCache(x: BlockCache, y: BlockCache): boolean {
  return (
    x.kind === y.kind &&
    x.bytesPerToken === y.bytesPerToken &&
    x.windowTokens === y.windowTokens &&
    x.recent?.bytesPerToken === y.recent?.bytesPerToken &&
    x.recent?.windowTokens === y.recent?.windowTokens &&
    (x.fixedBytes ?? 0) === (y.fixedBytes ?? 0)
  )
}
