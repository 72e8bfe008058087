/**
 * The fastest route over a compiled graph, as a shortest path over block boundaries.
 *
 * Like Petals this is a shortest path, but hops only move forward, so the graph is a DAG and one sweep over
 * the boundaries in order replaces Dijkstra. The state is (host, boundary): a host either continues its hop
 * by one block or starts a new hop at the boundary. A new hop's cost is the best arrival at that boundary
 * plus the link to it. Unmeasured links all cost the default, so the best of them comes from the TOP cheapest
 * arrivals; measured links are pushed from each arrival that could still beat that (links sorted by latency,
 * so the push stops early). Work per search: O(Σ span lengths + measured links pushed) instead of
 * O(hosts² × blocks), and the route found is the fastest (tests check it against a full search over every
 * host sequence). A hop ends only at a boundary where the manifest allows a cut: elsewhere nobody arrives, and hosts
 * whose range ends there drop out (a host's range may still serve a sub-range that ends at an allowed cut).
 */
import type { RouteGraph } from './route-graph'

/** One hop found by the search: a host's number in the graph and the blocks [begin, end) it computes. */
export interface SearchedHop {
  host: number
  begin: number
  end: number
}

const NONE = -2
/** Predecessor index for "the span's previous hop" (the client, or the host before a repaired span). */
const PREVIOUS = -1
/** How many of the cheapest arrivals each hop entry looks at before falling back to a scan. */
const TOP = 2

/** Search state and scratch for one graph, reused by every search on it (one at a time). */
export class RouteSearch {
  private readonly graph: RouteGraph
  // Hop entries, at stateBase[h] + boundary - begin[h]: the host
  // that fed the hop, and where that host's own hop started.
  private readonly fromAt: Int32Array
  private readonly fromStartAt: Int32Array
  private readonly cur: Float64Array
  private readonly hopStart: Int32Array
  private readonly arrivalMs: Float64Array
  private readonly arrivals: Int32Array
  private readonly active: Int32Array
  private readonly arrivalStart: Int32Array
  private finalStart = 0
  private readonly pushedMs: Float64Array
  private readonly pushedFrom: Int32Array
  private readonly pushedAt: Int32Array
  private readonly topLinks: Uint8Array
  private readonly topLinksAt: Int32Array

  constructor(graph: RouteGraph) {
    this.graph = graph
    const n = graph.size
    this.fromStartAt = new Int32Array(graph.states)
    this.fromAt = new Int32Array(graph.states)
    this.cur = new Float64Array(n)
    this.hopStart = new Int32Array(n)
    this.arrivalMs = new Float64Array(n)
    this.arrivals = new Int32Array(n)
    this.active = new Int32Array(n)
    this.arrivalStart = new Int32Array(n)
    this.pushedMs = new Float64Array(n)
    this.pushedFrom = new Int32Array(n)
    this.pushedAt = new Int32Array(n)
    this.topLinks = new Uint8Array(n)
    this.topLinksAt = new Int32Array(n)
  }

  /**
   * The fastest hops through blocks [spanBegin, spanEnd) on the hosts marked 1 in `eligible`, in route order;
   * undefined when they do not cover the span. It may use one host twice, around a detour (see RoutePlanner).
   */
  fastest(
    eligible: Uint8Array,
    spanBegin: number,
    spanEnd: number,
    previousHop: string,
    nextHop: string,
    /**
     * Per host, added to this request's hops on it in place of the graph's entry penalty (a relaying client's round
     * trip to the host, its relay included).
     */
    requestEntryMs?: Float64Array,
  ): SearchedHop[] | undefined {
    const finalHost = this.sweep(eligible, spanBegin, spanEnd, previousHop, nextHop, requestEntryMs)
    return finalHost === NONE ? undefined : this.hops(finalHost, spanEnd)
  }

  /** One pass over boundaries spanBegin..spanEnd; returns the last hop's host, or NONE when no route exists. */
  private sweep(
    eligible: Uint8Array,
    spanBegin: number,
    spanEnd: number,
    previousHop: string,
    nextHop: string,
    requestEntryMs?: Float64Array,
  ): number {
    const {
      cur,
      arrivalMs,
      arrivalStart,
      arrivals,
      active,
      hopStart,
      pushedMs,
      pushedFrom,
      pushedAt,
      topLinks,
      topLinksAt,
    } = this
    const { graph } = this
    const { begin, end, stepMs, entryPenaltyMs, stateBase, outStart, outTo, outMs, minInMs, minOutMs, cuts } = graph
    const defaultMs = graph.costs.defaultLatencyMs
    const slack = requestEntryMs === undefined ? graph.maxEntryPenaltyMs : 0
    pushedAt.fill(-1)
    topLinksAt.fill(-1)
    const top = new Int32Array(TOP)
    let activeCount = 0
    let nextToAdd = 0
    let finalMs = Number.POSITIVE_INFINITY
    let finalHost = NONE

    for (let b = spanBegin; b <= spanEnd; b++) {
      // Arrivals at boundary b: hosts whose running hop has computed block b - 1.
      // The same pass drops hosts whose range ends at b from the hosts covering block b.
      let arrivalCount = 0
      let topCount = 0
      let kept = 0
      const canCut = cuts[b] === 1
      for (let k = 0; k < activeCount; k++) {
        const g = active[k] as number
        if ((end[g] as number) > b) active[kept++] = g
        const ms = cur[g] as number
        if (ms === Number.POSITIVE_INFINITY || !canCut) continue
        arrivalMs[g] = ms
        arrivalStart[g] = hopStart[g] as number
        arrivals[arrivalCount++] = g
        // Keep the TOP cheapest, in order (ties keep host-id order).
        let at = topCount < TOP ? topCount++ : TOP
        while (at > 0 && (arrivalMs[top[at - 1] as number] as number) > ms) {
          if (at < TOP) top[at] = top[at - 1] as number
          at--
        }
        if (at < TOP) top[at] = g
      }

      if (b === spanEnd) {
        for (let k = 0; k < arrivalCount; k++) {
          const g = arrivals[k] as number
          const ms = (arrivalMs[g] as number) + graph.linkMs(graph.idOf(g), nextHop)
          if (ms < finalMs) {
            finalMs = ms
            finalHost = g
            this.finalStart = arrivalStart[g] as number
          }
        }
        break
      }

      // Then add the hosts whose range starts here.
      activeCount = kept
      while (nextToAdd < graph.size && (begin[nextToAdd] as number) <= b) {
        const h = nextToAdd++
        if (eligible[h] === 1 && (end[h] as number) > b) {
          active[activeCount++] = h
          cur[h] = Number.POSITIVE_INFINITY
        }
      }

      // Push arrivals along their measured links. An arrival costlier than the TOP-th cheapest plus the
      // default latency cannot beat the default link from one of the TOP cheapest, so it stays put.
      // (A default link into a relayed host costs its penalty too, which a measured link does not.)
      const pushBelow =
        topCount < TOP ? Number.POSITIVE_INFINITY : (arrivalMs[top[TOP - 1] as number] as number) + defaultMs + slack
      for (let k = 0; k < arrivalCount; k++) {
        const g = arrivals[k] as number
        const ms = arrivalMs[g] as number
        if (ms >= pushBelow) continue
        let topBit = 0
        for (let t = 0; t < topCount; t++) if (top[t] === g) topBit = 1 << t
        if (topBit === 0 && ms + (minOutMs[g] as number) >= pushBelow) continue
        const last = outStart[g + 1] as number
        for (let e = outStart[g] as number; e < last; e++) {
          const via = ms + (outMs[e] as number)
          // Links are sorted: the rest cannot beat a default link
          // either. The cheapest arrivals go on, to mark every link.
          if (via >= pushBelow && topBit === 0) break
          const h = outTo[e] as number
          if (eligible[h] === 0 || (begin[h] as number) > b || (end[h] as number) <= b) continue
          if (topBit !== 0) {
            // Remember which of the cheapest arrivals reach h by a
            // measured link: their default estimate does not apply.
            topLinks[h] = topLinksAt[h] === b ? (topLinks[h] as number) | topBit : topBit
            topLinksAt[h] = b
          }
          if (pushedAt[h] !== b || via < (pushedMs[h] as number)) {
            pushedMs[h] = via
            pushedFrom[h] = g
            pushedAt[h] = b
          }
        }
      }

      const cheapestArrival = topCount > 0 ? (arrivalMs[top[0] as number] as number) : 0
      for (let k = 0; k < activeCount; k++) {
        const h = active[k] as number
        const continuing = cur[h] as number
        // A relay's cost rides on a link nobody measured; a measured link into h (a relayed host is measured through
        // its relay) holds it already. A relaying client's round trips are this request's, one per hop.
        const penalty = requestEntryMs?.[h] ?? (entryPenaltyMs[h] as number)
        const measuredPenalty = requestEntryMs?.[h] ?? 0
        let entryMs = Number.POSITIVE_INFINITY
        let from = NONE
        if (b === spanBegin) {
          // (a relaying client's round trip stands for the link: every route is charged the default for it)
          const measured = requestEntryMs === undefined ? graph.measuredLinkMs(previousHop, graph.idOf(h)) : undefined
          entryMs = measured === undefined ? defaultMs + penalty : measured + measuredPenalty
          from = PREVIOUS
        } else if (continuing > cheapestArrival + (minInMs[h] as number) + measuredPenalty) {
          // The default link: from the cheapest arrival that is neither h nor linked to h by a measurement.
          const measured = topLinksAt[h] === b ? (topLinks[h] as number) : 0
          let found = false
          for (let t = 0; t < topCount; t++) {
            const g = top[t] as number
            if (g === h || (measured & (1 << t)) !== 0) continue
            entryMs = (arrivalMs[g] as number) + defaultMs
            from = g
            found = true
            break
          }
          if (!found && arrivalCount > topCount) {
            // Rare: every one of the cheapest is h or measured into h, so look at all arrivals, links included.
            for (let a = 0; a < arrivalCount; a++) {
              const g = arrivals[a] as number
              if (g === h) continue
              const link = graph.measuredMs(g, h)
              const ms = (arrivalMs[g] as number) + (link === undefined ? defaultMs + penalty : link + measuredPenalty)
              if (ms < entryMs) {
                entryMs = ms
                from = g
              }
            }
          } else entryMs += penalty
          if (pushedAt[h] === b && (pushedMs[h] as number) + measuredPenalty < entryMs) {
            entryMs = (pushedMs[h] as number) + measuredPenalty
            from = pushedFrom[h] as number
          }
        }
        if (entryMs < continuing) {
          cur[h] = entryMs
          hopStart[h] = b
          const state = (stateBase[h] as number) + b - (begin[h] as number)
          this.fromAt[state] = from
          this.fromStartAt[state] = from >= 0 ? (arrivalStart[from] as number) : PREVIOUS
        }
        cur[h] = (cur[h] as number) + (stepMs[h] as number)
      }
    }

    return finalHost
  }

  /**
   * Walks the hop entries back from the last hop; each step goes back one non-empty hop, so this ends within the span.
   */
  private hops(last: number, spanEnd: number): SearchedHop[] {
    const { begin, stateBase } = this.graph
    const hops: SearchedHop[] = []
    let host = last
    let start = this.finalStart
    let at = spanEnd
    while (host >= 0) {
      hops.push({ host, begin: start, end: at })
      const state = (stateBase[host] as number) + start - (begin[host] as number)
      host = this.fromAt[state] as number
      at = start
      start = this.fromStartAt[state] as number
    }
    return hops.reverse()
  }
}
