// Why a host should not serve a model: too little memory, too little disk, or too slow, with what to do about it.
import type { BlockRange } from '../../protocol'
import type { CandidateSearch, SearchSpace } from './candidates'
import type { PlacementDecision } from './types'

/** The refusal when no range passed: memory first, then disk, then speed (the least slow range is quoted). */
export function refusal(space: SearchSpace, search: CandidateSearch, kvBudgetTokens: number): PlacementDecision {
  const { host, cuts, sizes, routes, maxSlowdown } = space
  const { fitsMemory, leastSlow } = search
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
        `needs ${gb(needed)} (weights + KV for ${kvBudgetTokens} tokens); free memory or lower the KV budget`,
      details: {
        freeMemoryBytes: host.freeMemoryBytes,
        neededBytes: needed,
        block: a,
        blocks: [a, e],
        kvBudgetTokens,
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
