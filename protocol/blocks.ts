// Facts about blocks and a host's budget that every program shares: one definition each.
import { z } from 'zod'
import type { CacheBudget } from './cache-cost'
import { Count } from './manifest'

export type BlockRange = readonly [number, number]
/**
 * Half-open block range [begin, end). Readonly by type only: zod 4's `.readonly()` freezes the
 * input even when the parse fails, and throws on a Buffer sent in its place.
 */
export const BlockRange: z.ZodType<BlockRange, BlockRange> = z
  .tuple([Count, Count])
  .refine(([a, b]) => a < b, 'a block range [begin, end) needs begin < end')

/** KV-cache tokens a placed range is sized for, per block: four sessions of 2048 tokens. */
export const KV_BUDGET_TOKENS = 8192
/** The same budget with its sessions, for caches that cap each session (sliding windows) or hold state per session. */
export const KV_BUDGET: CacheBudget = { tokens: KV_BUDGET_TOKENS, sessions: 4 }

/** The context previews quote a range's cache at: one session of 128K tokens (fixed state and windows included). */
export const LONG_CONTEXT: CacheBudget = { tokens: 131_072, sessions: 1 }

/**
 * Of the memory a host has free (RAM plus VRAM), the share its blocks may plan to use by default:
 * the rest is for the user's own programs.
 */
export const MEMORY_SHARE = 0.8

/** n blocks cut into `parts` contiguous ranges as even as whole blocks allow (empty ones dropped). */
export function splitBlocks(n: number, parts: number): [number, number][] {
  const out: [number, number][] = []
  for (let i = 0; i < parts; i++) out.push([Math.floor((i * n) / parts), Math.floor(((i + 1) * n) / parts)])
  return out.filter(([a, b]) => a < b)
}
