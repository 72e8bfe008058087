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
  rangeCacheBytes,
  seamBytesPerToken,
  seamDtype,
} from '../../protocol'
import { byHostId, DEFAULT_ROUTE_COSTS, relayMs, usableSpan } from '../routing/costs'
import { RouteBounds } from '../routing/route-bounds'
import type { SwarmView } from '../routing/swarm-view'
import { type Candidate, candidate, SAME, type SearchSpace, searchCandidates, servedBefore } from './candidates'
import { RangeSizes } from './range-sizes'
import { refusal } from './refusals'
import { checkPlacementRequest } from './request-checks'
import {
  type BlockCoverage,
  DEFAULT_MAX_SLOWDOWN,
  type JoiningHost,
  type PlacementAlternative,
  type PlacementDecision,
  type PlacementModel,
  type PlacementOptions,
  type PlacementPreview,
  type PlacementProposal,
} from './types'

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
  checkPlacementRequest(view, model, host, options)
  const costs = options.costs ?? DEFAULT_ROUTE_COSTS
  const spans = view.spans.filter((s) => s.hostId !== host.hostId && usableSpan(s, n)).sort(byHostId)
  const { before, hostsBefore } = servedBefore(spans, n)
  const swarmBefore = Math.min(...before)
  const cuts = allowedCuts(model)
  const space: SearchSpace = {
    host,
    n,
    cuts,
    sizes: new RangeSizes(model, { tokens: options.kvBudgetTokens, sessions: options.kvBudgetSessions ?? 1 }),
    routes: new RouteBounds(spans, n, costs, cuts),
    before,
    hostsBefore,
    recruitTwins: options.twins === true && hostsBefore.every((h) => h > 0),
    maxSlowdown: options.maxSlowdown ?? DEFAULT_MAX_SLOWDOWN,
    newHostPenaltyMs: relayMs(host, costs),
  }
  const { sizes, routes, newHostPenaltyMs } = space
  const search = searchCandidates(space)
  const { candidates } = search
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
      decision: refusal(space, search, options.kvBudgetTokens),
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
  const [runBegin, runEnd] = weakestRun(before, cuts, best.blocks)
  const [a, e] = best.blocks
  // Offered once: the smaller range may be one of the next-best starts already listed.
  const listed = alternatives.some((o) => o.blocks[0] === runBegin && o.blocks[1] === runEnd)
  if (runEnd - runBegin < e - a && !listed) {
    const smaller = candidate(
      space,
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

/** The run of `range`'s weakest blocks (before the host joins), widened to allowed cuts (the range's ends are). */
function weakestRun(before: Float64Array, cuts: Uint8Array, [a, e]: BlockRange): BlockRange {
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
  return [runBegin, runEnd]
}
