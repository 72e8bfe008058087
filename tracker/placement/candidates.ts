// The search for a joining host's range: every start, the longest range from it that fits and is not too slow.
import type { BlockRange } from '../../protocol'
import type { RouteBounds } from '../routing/route-bounds'
import type { ServedSpan } from '../routing/swarm-view'
import type { RangeSizes } from './range-sizes'
import type { JoiningHost } from './types'

/** Relative tolerance under which two throughputs count as equal, so float noise never decides a placement. */
export const SAME = 1e-9

/** Tokens/s one host adds to each block it serves (see the throughput model in placement.ts). */
export function spanTokensPerSecond(msPerBlock: number, blocks: number): number {
  return 1000 / (msPerBlock * blocks)
}

/** What the search works from: the swarm before the host joins, the host, and the model's sizes. */
export interface SearchSpace {
  readonly host: JoiningHost
  readonly n: number
  /** Where a range may start and end (`cuts[b]` = 1). */
  readonly cuts: Uint8Array
  readonly sizes: RangeSizes
  readonly routes: RouteBounds
  /** Each block's served throughput before the host joins, tokens/s. */
  readonly before: Float64Array
  /** How many hosts serve each block before the host joins. */
  readonly hostsBefore: Int32Array
  /** Count blocks a range gives a second host (`twins`, once every block is served). */
  readonly recruitTwins: boolean
  readonly maxSlowdown: number
  /** What reaching the new host adds to a route through it, ms. */
  readonly newHostPenaltyMs: number
}

export interface Candidate {
  blocks: BlockRange
  bytesToDownload: number
  memoryBytes: number
  cacheBytes: number
  tokensPerSecond: number
  /** Per-block throughput after placement, ascending: the comparison key. */
  sortedAfter: Float64Array
  /** Blocks of the range served by one host alone before it (counted only with `twins`, once every block is served). */
  twinned: number
  bestRouteMsPerToken: number | null
}

export interface CandidateSearch {
  /** The ranges that fit and pass the slowdown limit, best first. */
  readonly candidates: Candidate[]
  /** Whether any range fits the host's free memory (else the refusal is for memory). */
  readonly fitsMemory: boolean
  /** Of the ranges refused as too slow, the one with the fastest route through it: what a refusal quotes. */
  readonly leastSlow: { blocks: BlockRange; routeMs: number } | undefined
}

/** A block's served throughput and its hosts, before the joining host (draining hosts are leaving: not counted). */
export function servedBefore(
  spans: readonly ServedSpan[],
  n: number,
): { before: Float64Array; hostsBefore: Int32Array } {
  const before = new Float64Array(n)
  const hostsBefore = new Int32Array(n)
  for (const s of spans) {
    if (s.status === 'draining') continue
    const t = spanTokensPerSecond(s.msPerBlock, s.blocks[1] - s.blocks[0])
    for (let b = s.blocks[0]; b < s.blocks[1]; b++) {
      before[b] = (before[b] as number) + t
      hostsBefore[b] = (hostsBefore[b] as number) + 1
    }
  }
  return { before, hostsBefore }
}

/** From every allowed start, the longest range that fits memory and disk, shortened until it is not too slow. */
export function searchCandidates(space: SearchSpace): CandidateSearch {
  const { host, n, cuts, sizes, routes, maxSlowdown, newHostPenaltyMs } = space
  const candidates: Candidate[] = []
  let fitsMemory = false
  let leastSlow: CandidateSearch['leastSlow']
  for (let a = 0; a < n; a++) {
    if (cuts[a] === 0) continue
    // The longest range from a to an allowed cut that fits memory
    // and disk; memory and download grow with the end block.
    let end = a
    for (let e = a + 1; e <= n; e++) {
      const memory = sizes.memoryBytes(a, e)
      if (memory > host.freeMemoryBytes) break
      if (cuts[e] === 0) continue
      fitsMemory = true
      if (sizes.downloadBytes(a, e) > host.freeDiskBytes) break
      end = e
    }
    // Shorten (to allowed cuts) until the fastest route through the host, serving the whole range, is not too slow.
    for (; end > a; end--) {
      if (cuts[end] === 0) continue
      const routeMs = routes.throughNewHost(a, end, host.msPerBlock * (end - a) + newHostPenaltyMs)
      if (routes.bestMs === Number.POSITIVE_INFINITY || routeMs <= maxSlowdown * routes.bestMs) {
        candidates.push(candidate(space, a, end, routeMs))
        break
      }
      if (leastSlow === undefined || routeMs < leastSlow.routeMs) leastSlow = { blocks: [a, end], routeMs }
    }
  }
  candidates.sort(compareCandidates)
  return { candidates, fitsMemory, leastSlow }
}

/** The host serving [a, e): what it costs and what the swarm has after it; `routeMs` the fastest route through it. */
export function candidate(space: SearchSpace, a: number, e: number, routeMs: number): Candidate {
  const { host, sizes, before, hostsBefore, recruitTwins } = space
  const tokensPerSecond = spanTokensPerSecond(host.msPerBlock, e - a)
  const after = Float64Array.from(before)
  let twinned = 0
  for (let b = a; b < e; b++) {
    after[b] = (after[b] as number) + tokensPerSecond
    if (recruitTwins && hostsBefore[b] === 1) twinned++
  }
  return {
    blocks: [a, e],
    bytesToDownload: sizes.downloadBytes(a, e),
    memoryBytes: sizes.memoryBytes(a, e),
    cacheBytes: sizes.cacheBytes(a, e),
    tokensPerSecond,
    sortedAfter: after.sort(),
    twinned,
    bestRouteMsPerToken: Number.isFinite(routeMs) ? routeMs : null,
  }
}

/** More blocks twinned first, then the higher weakest block (and so on up), then the longer range, the lower start. */
function compareCandidates(x: Candidate, y: Candidate): number {
  if (x.twinned !== y.twinned) return y.twinned - x.twinned
  for (let i = 0; i < x.sortedAfter.length; i++) {
    const a = x.sortedAfter[i] as number
    const b = y.sortedAfter[i] as number
    if (Math.abs(a - b) > SAME * Math.max(Math.abs(a), Math.abs(b))) return b - a
  }
  const lengthX = x.blocks[1] - x.blocks[0]
  const lengthY = y.blocks[1] - y.blocks[0]
  return lengthY - lengthX || x.blocks[0] - y.blocks[0]
}
