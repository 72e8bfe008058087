import { z } from 'zod'
import { BlockRange } from './blocks'
import { MAX_BLOCKS, MAX_LABEL_CHARS, MAX_MESSAGE_CHARS } from './limits'
import { Count, ModelId } from './manifest'

// The tracker's answer to "which blocks should this computer serve" (placement.request, placement.preview).

const Label = z.string().max(MAX_LABEL_CHARS)

const PlacementOption = z.object({
  blocks: BlockRange,
  bytesToDownload: Count,
  memoryBytes: Count,
  /** Of memoryBytes, the cache of the range's blocks at the host's KV budget (absent from older trackers). */
  cacheBytes: Count.optional(),
  /**
   * Cache bytes one token adds across the range's blocks, each
   * block's cost from the manifest (absent from older trackers).
   */
  cacheBytesPerToken: Count.optional(),
  /** The range's cache for one 128K-token session (LONG_CONTEXT), fixed state included (absent from older trackers). */
  longContextCacheBytes: Count.optional(),
  /**
   * The tokens of that session: 128K, or the model's context length when shorter (absent from older trackers: 128K).
   */
  longContextTokens: Count.optional(),
  /**
   * Bytes one token brings into the range and sends out of it
   * across its inner seams, at f16 (absent from older trackers).
   */
  seamBytesPerToken: Count.optional(),
  /** What this host adds to each block of its range, tokens/s. */
  expectedTokensPerSecond: z.number().nonnegative(),
  /** The swarm's weakest block once this host serves the range, tokens/s. */
  swarmTokensPerSecond: z.number().nonnegative(),
  /** The fastest route through this host on this range, ms per token; null while no complete route exists. */
  bestRouteMsPerToken: z.number().nonnegative().nullable(),
  /**
   * What this range would earn the host in an hour at
   * `expectedTokensPerSecond`, micro-credits, at the tracker's price and fee.
   */
  hostMicroPerHour: Count.optional(),
})
export type PlacementOption = z.infer<typeof PlacementOption>
const Served = z.object({ tokensPerSecond: z.number().nonnegative(), hosts: Count })
export const PlacementProposal = z.object({
  modelId: ModelId,
  /** null when this host should not serve this model; `refusal` says why. */
  proposal: PlacementOption.nullable(),
  /**
   * `neededBytes`: what the smallest range needs of the resource refused (memory or disk), absent from older trackers.
   */
  refusal: z
    .object({ code: Label, reason: z.string().max(MAX_MESSAGE_CHARS), neededBytes: Count.optional() })
    .nullable(),
  /** The swarm's weakest block today, tokens/s (0 while a block is not served). */
  swarmTokensPerSecond: z.number().nonnegative(),
  coverage: z.array(z.object({ block: Count, before: Served, after: Served })).max(MAX_BLOCKS),
  alternatives: z.array(PlacementOption.extend({ why: z.string().max(MAX_MESSAGE_CHARS) })).max(MAX_BLOCKS),
  /**
   * Hosts with this one's usable memory that one route through the model
   * needs; null when a block fits none (absent from older trackers).
   */
  hostsPerRoute: Count.nullable().optional(),
})
export type PlacementProposal = z.infer<typeof PlacementProposal>
