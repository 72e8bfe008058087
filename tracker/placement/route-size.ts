// How many hosts of a given size one route through a model needs, and what crosses between them: the preview of a
// model before anyone serves it (`neuron inspect --config`) and of a joining host (the placement preview).
import type { ServingPreview } from '../../gguf/inspect'
import {
  type BlockRange,
  type CacheBudget,
  cutAllowed,
  KV_BUDGET,
  LONG_CONTEXT,
  rangeCacheBytes,
  seamBytesPerToken,
} from '../../protocol'
import { RangeSizes, type SizedModel } from './range-sizes'

/**
 * The fewest hosts of `usableBytes` each (memory for weights, embed or head at the ends, and cache at the budget)
 * that carry one route through the whole model, and the ranges they serve; undefined when some block fits no such
 * host. Each range runs from an allowed cut to the furthest allowed cut that fits: memory grows with the range's
 * end and shrinks as its start moves on, so going furthest first needs the fewest hosts.
 */
export function hostsPerRoute(model: SizedModel, usableBytes: number, budget: CacheBudget): BlockRange[] | undefined {
  const sizes = new RangeSizes(model, budget)
  const ranges: BlockRange[] = []
  for (let a = 0; a < model.nLayer; ) {
    let end = a
    for (let e = a + 1; e <= model.nLayer && sizes.memoryBytes(a, e) <= usableBytes; e++)
      if (cutAllowed(model, e)) end = e
    if (end === a) return undefined
    ranges.push([a, end])
    a = end
  }
  return ranges
}

/**
 * A model served by hosts of `usableBytes` each at the placement
 * KV budget: the route's hosts, its seams, its long-context cache.
 */
export function servingPreview(model: SizedModel, usableBytes: number): ServingPreview {
  const seams = Array.from({ length: model.nLayer - 1 }, (_, i) => seamBytesPerToken(model, i + 1))
  // a model trained for fewer tokens is quoted at its own context
  const longContext = {
    ...LONG_CONTEXT,
    tokens: Math.min(LONG_CONTEXT.tokens, model.contextLength ?? LONG_CONTEXT.tokens),
  }
  return {
    usableBytes,
    ranges: hostsPerRoute(model, usableBytes, KV_BUDGET) ?? null,
    seamBytesPerToken: seams.length === 0 ? { min: 0, max: 0 } : { min: Math.min(...seams), max: Math.max(...seams) },
    longContextTokens: longContext.tokens,
    longContextCacheBytes: rangeCacheBytes(model, [0, model.nLayer], longContext),
  }
}
