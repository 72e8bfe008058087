/**
 * Placement: which blocks a joining host should serve.
 *
 * Throughput model. A decode token crosses a host's whole span before the host can take the next one,
 * so a host serving L blocks at msPerBlock m adds 1000 / (m × L) tokens/s to each block of its span.
 * A block's served throughput is the sum over the hosts covering it that are ready, loading or
 * downloading (draining hosts are leaving); the swarm's throughput is that of its weakest block.
 *
 * Choice. The host serves as many blocks as fit its free memory (weights + KV budget) and disk
 * (artifacts to download), starting where the swarm gains most: candidates are compared by their
 * per-block throughput after placement, sorted ascending (raise the weakest block first, then the
 * next weakest; covering more of a gap wins), then the longer range, then the lower start block.
 *
 * Cuts. A range starts and ends only where the manifest allows a route to cut (protocol/seams.ts).
 *
 * Twins. With `twins`, once every block is served, a range that gives more blocks served by one host alone a
 * second host wins first (then throughput decides): an audit re-runs a step on another host of its blocks, and a
 * block with one host can be checked only against that host itself (tracker/checks/auditor.ts).
 *
 * Exclusion. A host slows every route it joins when even the fastest route through it, serving its
 * whole proposed range, takes more than `maxSlowdown` × the swarm's current best route per token.
 * Such a range is shortened until it passes; a host with no passing range is refused. While the swarm
 * has no complete route, every host that fits is welcome: it can only help close a gap.
 */
import {
  allowedCuts,
  type BlockRange,
  LONG_CONTEXT,
  NeuronError,
  rangeCacheBytes,
  seamBytesPerToken,
  seamDtype,
} from '../../protocol'
import { byHostId, DEFAULT_ROUTE_COSTS, type RouteCosts, relayMs, usableSpan } from '../routing/costs'
import { RouteBounds } from '../routing/route-bounds'
import type { SwarmView } from '../routing/swarm-view'
import { RangeSizes, type SizedModel } from './range-sizes'

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
  /** Recruit twins: once every block is served, first give blocks with a single host a second one (see Twins above). */
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

/** Tokens/s one host adds to each block it serves (see the throughput model above). */
export function spanTokensPerSecond(msPerBlock: number, blocks: number): number {
  return 1000 / (msPerBlock * blocks)
}

/** Relative tolerance under which two throughputs count as equal, so float noise never decides a placement. */
const SAME = 1e-9

interface Candidate {
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

/**
 * What a host would serve if it joined now, before anything is downloaded: the proposal (or why not), the
 * coverage of every block before and after, and other ranges it could take. Pure and deterministic: the
 * same swarm, model and host give the same preview, whatever order the registry lists the hosts in.
 */
export function previewPlacement(
  view: SwarmView,
  model: PlacementModel,
  host: JoiningHost,
  options: PlacementOptions,
): PlacementPreview {
  const longContext = {
    ...LONG_CONTEXT,
    tokens: Math.min(LONG_CONTEXT.tokens, model.contextLength ?? LONG_CONTEXT.tokens),
  }
  const n = view.nBlocks
  checkRequest(view, model, host, options)
  const costs = options.costs ?? DEFAULT_ROUTE_COSTS
  const maxSlowdown = options.maxSlowdown ?? DEFAULT_MAX_SLOWDOWN
  const spans = view.spans.filter((s) => s.hostId !== host.hostId && usableSpan(s, n)).sort(byHostId)

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
  const swarmBefore = Math.min(...before)
  const recruitTwins = options.twins === true && hostsBefore.every((h) => h > 0)
  const cuts = allowedCuts(model)
  const routes = new RouteBounds(spans, n, costs, cuts)
  const newHostPenaltyMs = relayMs(host, costs)
  const sizes = new RangeSizes(model, { tokens: options.kvBudgetTokens, sessions: options.kvBudgetSessions ?? 1 })

  const candidates: Candidate[] = []
  let fitsMemory = false
  /** Of the ranges refused as too slow, the one with the fastest route through it: what a refusal quotes. */
  let leastSlow: { blocks: BlockRange; routeMs: number } | undefined
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
        candidates.push(candidate(a, end, routeMs))
        break
      }
      if (leastSlow === undefined || routeMs < leastSlow.routeMs) leastSlow = { blocks: [a, end], routeMs }
    }
  }

  function candidate(a: number, e: number, routeMs: number): Candidate {
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

  candidates.sort(compareCandidates)
  const best = candidates[0]
  const coverageWith = (placed: Candidate | undefined): BlockCoverage[] =>
    Array.from(before, (tokensPerSecond, block) => {
      const inside = placed !== undefined && block >= placed.blocks[0] && block < placed.blocks[1]
      const hosts = hostsBefore[block] as number
      return {
        block,
        before: { tokensPerSecond, hosts },
        after: inside
          ? { tokensPerSecond: tokensPerSecond + placed.tokensPerSecond, hosts: hosts + 1 }
          : { tokensPerSecond, hosts },
      }
    })

  if (best === undefined) {
    return {
      decision: refusal(),
      swarmTokensPerSecond: swarmBefore,
      coverage: coverageWith(undefined),
      alternatives: [],
    }
  }

  const alternatives: PlacementAlternative[] = []
  for (const other of candidates.slice(1)) {
    if (alternatives.length === 2) break
    alternatives.push({
      ...proposal(other),
      why: `next-best start: covers blocks [${other.blocks[0]}, ${other.blocks[1]})`,
    })
  }
  // The bottleneck run inside the chosen range alone: fewer blocks, so more tokens/s on each of them.
  const [a, e] = best.blocks
  let weakest = a
  for (let b = a; b < e; b++) if ((before[b] as number) < (before[weakest] as number) * (1 - SAME)) weakest = b
  let runBegin = weakest
  let runEnd = weakest + 1
  const isWeakest = (b: number) => (before[b] as number) <= (before[weakest] as number) * (1 + SAME)
  while (runBegin > a && isWeakest(runBegin - 1)) runBegin--
  while (runEnd < e && isWeakest(runEnd)) runEnd++
  // Widened to allowed cuts (a and e are).
  while (cuts[runBegin] === 0) runBegin--
  while (cuts[runEnd] === 0) runEnd++
  // Offered once: the smaller range may be one of the next-best starts already listed.
  const listed = alternatives.some((o) => o.blocks[0] === runBegin && o.blocks[1] === runEnd)
  if (runEnd - runBegin < e - a && !listed) {
    const smaller = candidate(
      runBegin,
      runEnd,
      routes.throughNewHost(runBegin, runEnd, host.msPerBlock * (runEnd - runBegin) + newHostPenaltyMs),
    )
    alternatives.push({
      ...proposal(smaller),
      why: `smaller range: only the weakest blocks [${runBegin}, ${runEnd}), less memory and more tokens/s on each`,
    })
  }

  return {
    decision: { serve: true, proposal: proposal(best) },
    swarmTokensPerSecond: swarmBefore,
    coverage: coverageWith(best),
    alternatives,
  }

  function refusal(): PlacementDecision {
    // MB below 0.1 GB: a small limit reads as what it is, not "0.00 GB"
    const gb = (bytes: number) => (bytes >= 1e8 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`)
    if (!fitsMemory) {
      const [a, e] = cheapestRange(cuts, (a, e) => sizes.memoryBytes(a, e))
      const needed = sizes.memoryBytes(a, e)
      return {
        serve: false,
        code: 'too_little_memory',
        reason:
          `${gb(host.freeMemoryBytes)} of free memory holds no block: the smallest, ${rangeName(a, e)}, ` +
          `needs ${gb(needed)} (weights + KV for ${options.kvBudgetTokens} tokens); free memory or lower the KV budget`,
        details: {
          freeMemoryBytes: host.freeMemoryBytes,
          neededBytes: needed,
          block: a,
          blocks: [a, e],
          kvBudgetTokens: options.kvBudgetTokens,
        },
      }
    }
    if (leastSlow === undefined) {
      const [a, e] = cheapestRange(cuts, (a, e) => sizes.downloadBytes(a, e))
      const needed = sizes.downloadBytes(a, e)
      return {
        serve: false,
        code: 'too_little_disk',
        reason:
          `${gb(host.freeDiskBytes)} of free disk holds no block's artifacts: the smallest download, for ` +
          `${rangeName(a, e)}, is ${gb(needed)}; free disk space or raise the disk quota`,
        details: { freeDiskBytes: host.freeDiskBytes, neededBytes: needed, block: a, blocks: [a, e] },
      }
    }
    const slowdown = leastSlow.routeMs / routes.bestMs
    return {
      serve: false,
      code: 'too_slow',
      reason:
        `at ${host.msPerBlock} ms per block this host would slow every route it joins: the fastest route through ` +
        `it (blocks [${leastSlow.blocks[0]}, ${leastSlow.blocks[1]})) ` +
        `takes ${leastSlow.routeMs.toFixed(1)} ms per token, ${slowdown.toFixed(2)}× the swarm's best ` +
        `${routes.bestMs.toFixed(1)} ms (limit ${maxSlowdown}×); ` +
        'serve on a faster device (GPU) or use this one as a client',
      details: {
        msPerBlock: host.msPerBlock,
        blocks: leastSlow.blocks,
        routeMsPerToken: leastSlow.routeMs,
        bestRouteMsPerToken: routes.bestMs,
        slowdown,
        maxSlowdown,
      },
    }
  }

  function proposal(c: Candidate): PlacementProposal {
    return {
      blocks: c.blocks,
      bytesToDownload: c.bytesToDownload,
      memoryBytes: c.memoryBytes,
      cacheBytes: c.cacheBytes,
      cacheBytesPerToken: sizes.cacheBytesPerToken(c.blocks[0], c.blocks[1]),
      longContextCacheBytes: rangeCacheBytes(model, c.blocks, longContext),
      longContextTokens: longContext.tokens,
      seamBytesPerToken:
        (c.blocks[0] > 0 ? seamBytesPerToken(model, c.blocks[0], seamDtype(model)) : 0) +
        (c.blocks[1] < n ? seamBytesPerToken(model, c.blocks[1], seamDtype(model)) : 0),
      expectedTokensPerSecond: c.tokensPerSecond,
      swarmTokensPerSecond: c.sortedAfter[0] as number,
      bestRouteMsPerToken: c.bestRouteMsPerToken,
    }
  }
}

/** The range a joining host should serve, or why it should not serve this model. */
export function planPlacement(
  view: SwarmView,
  model: PlacementModel,
  host: JoiningHost,
  options: PlacementOptions,
): PlacementDecision {
  return previewPlacement(view, model, host, options).decision
}

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

function checkRequest(view: SwarmView, model: PlacementModel, host: JoiningHost, options: PlacementOptions): void {
  const fail = (message: string, details: Record<string, unknown>) => {
    throw new NeuronError('bad_placement_request', message, details)
  }
  if (model.nLayer !== view.nBlocks || model.bytesPerBlock.length !== model.nLayer) {
    fail(
      `the model has ${model.nLayer} blocks and ${model.bytesPerBlock.length} block sizes but the swarm view has ` +
        `${view.nBlocks}; pass the manifest of the swarm's model`,
      {
        nLayer: model.nLayer,
        bytesPerBlock: model.bytesPerBlock.length,
        nBlocks: view.nBlocks,
      },
    )
  }
  if (!(host.msPerBlock > 0 && Number.isFinite(host.msPerBlock))) {
    fail(
      `a host's measured time per block must be a positive number of ms, got ${host.msPerBlock}; run the compute ` +
        `benchmark first`,
      {
        msPerBlock: host.msPerBlock,
      },
    )
  }
  if (!(options.kvBudgetTokens >= 0 && Number.isFinite(options.kvBudgetTokens))) {
    fail(`the KV budget must be 0 or more tokens, got ${options.kvBudgetTokens}`, {
      kvBudgetTokens: options.kvBudgetTokens,
    })
  }
  const sessions = options.kvBudgetSessions ?? 1
  if (!(Number.isInteger(sessions) && sessions >= 1))
    fail(`the KV budget's sessions must be a whole number of at least 1, got ${sessions}`, { sessions })
  if (model.seams !== undefined && model.seams.length !== model.nLayer - 1) {
    fail(`the model has ${model.nLayer} blocks and ${model.seams.length} seams; pass a manifest that parses`, {
      nLayer: model.nLayer,
      seams: model.seams.length,
    })
  }
  if (model.cachePerBlock !== undefined && model.cachePerBlock.length !== model.nLayer) {
    fail(
      `the model has ${model.nLayer} blocks and ${model.cachePerBlock.length} block caches; pass a manifest that ` +
        `parses`,
      {
        nLayer: model.nLayer,
        cachePerBlock: model.cachePerBlock.length,
      },
    )
  }
}

/**
 * Of the ranges between neighbouring allowed cuts (single blocks when every cut is allowed), the one whose `cost` is
 * lowest (the first on a tie).
 */
function cheapestRange(cuts: Uint8Array, cost: (a: number, e: number) => number): BlockRange {
  let cheapest: BlockRange | undefined
  for (let a = 0, e = 1; e < cuts.length; e++) {
    if (cuts[e] === 0) continue
    if (cheapest === undefined || cost(a, e) < cost(cheapest[0], cheapest[1])) cheapest = [a, e]
    a = e
  }
  return cheapest ?? [0, cuts.length - 1]
}

function rangeName(a: number, e: number): string {
  return e === a + 1 ? `block ${a}` : `blocks [${a}, ${e}) (the manifest allows no cut inside)`
}
