// What placement is asked and what it answers: the joining host, the model, the options, the proposal or refusal.
import type { BlockRange } from '../../protocol'
import type { RouteCosts } from '../routing/costs'
import type { SizedModel } from './range-sizes'

export interface JoiningHost {
  /** Set when an already registered host asks again: its current span is left out of the swarm it is placed into. */
  hostId?: string
  /** Memory the runtime may use: VRAM for a GPU host, RAM otherwise, in bytes. */
  freeMemoryBytes: number
  freeDiskBytes: number
  /** Measured compute time per block per decode token, in ms. */
  msPerBlock: number
  relay: boolean
}

/** What placement needs from a model's manifest; a Manifest fits as is. */
export type PlacementModel = SizedModel

export interface PlacementOptions {
  /** KV-cache tokens the host keeps room for in every block it serves (sessions × context). */
  kvBudgetTokens: number
  /** Sessions those tokens are spread over (default 1): a sliding-window block keeps at most its window of each. */
  kvBudgetSessions?: number
  /** Refuse a range when the fastest route through it is more than this many times the current best route. */
  maxSlowdown?: number
  /**
   * Recruit twins: once every block is served, first give blocks with a single host a second one (see Twins in
   * placement.ts).
   */
  twins?: boolean
  costs?: RouteCosts
}

export const DEFAULT_MAX_SLOWDOWN = 2

export interface PlacementProposal {
  blocks: BlockRange
  /** Artifact bytes the host must fetch for this range. */
  bytesToDownload: number
  /** Weights plus the KV budget, in bytes. */
  memoryBytes: number
  /** Of memoryBytes, the cache of the range's blocks at the KV budget (each block's cost from the manifest). */
  cacheBytes: number
  /** Cache bytes one token adds across the range's blocks, while no sliding window is full. */
  cacheBytesPerToken: number
  /** The range's cache for one session of `longContextTokens`, fixed state included. */
  longContextCacheBytes: number
  /** LONG_CONTEXT (128K), or the model's context length when that is shorter. */
  longContextTokens: number
  /** Bytes one token brings into the range and sends out of it across its inner seams, activations at f16. */
  seamBytesPerToken: number
  /** What this host adds to each block of its range: 1000 / (msPerBlock × blocks). */
  expectedTokensPerSecond: number
  /** The swarm's weakest block once this host serves the range, in tokens/s. */
  swarmTokensPerSecond: number
  /** The fastest route through this host on this range, in ms per token; null while the swarm has no complete route. */
  bestRouteMsPerToken: number | null
}

export interface PlacementAlternative extends PlacementProposal {
  why: string
}

export type PlacementDecision =
  | { serve: true; proposal: PlacementProposal }
  | {
      serve: false
      code: 'too_little_memory' | 'too_little_disk' | 'too_slow'
      reason: string
      details: Record<string, unknown>
    }

export interface ServedThroughput {
  tokensPerSecond: number
  hosts: number
}

export interface BlockCoverage {
  block: number
  before: ServedThroughput
  /** With the proposal in place; equal to before when the host is refused. */
  after: ServedThroughput
}

export interface PlacementPreview {
  decision: PlacementDecision
  /** The swarm's weakest block today, in tokens/s (0 while some block is not served). */
  swarmTokensPerSecond: number
  coverage: BlockCoverage[]
  /** Other ranges the host could take instead: the next-best starts and a smaller range. */
  alternatives: PlacementAlternative[]
}
