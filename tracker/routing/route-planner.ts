/**
 * Route planning: which hosts, serving which sub-ranges, carry a session's hidden states
 * through blocks [a, b) fastest.
 *
 * Cost of a route, in expected ms per decode token:
 *   Σ hops (msPerBlock × blocks in the hop × load factor)  — compute
 * + Σ links (latency previous → hop1 → … → hopN → next)     — network, measured or the default estimate
 * + relay penalty per hop whose host is behind the tracker's relay.
 * Blocks on hosts under the reputation threshold carry a penalty larger than any real route, so those
 * hosts serve only the blocks nothing else serves.
 *
 * Like Petals this is a shortest path over block boundaries, but hops only move forward, so the graph is a
 * DAG and one sweep over the boundaries in order replaces Dijkstra. The state is (host, boundary): a host
 * either continues its hop by one block or starts a new hop at the boundary. A new hop's cost is the best
 * arrival at that boundary plus the link to it. Unmeasured links all cost the default, so the best of them
 * comes from the TOP cheapest arrivals; measured links are pushed from each arrival that could still beat
 * that (links sorted by latency, so the push stops early). Work per plan: O(Σ span lengths + measured links
 * pushed) instead of O(hosts² × blocks), and the route found is the fastest (tests check it against a full
 * search over every host sequence), but for the rare merged detour below.
 *
 * A host keeps one KV cache per session, so a route uses it for one hop: a route that would come back to a
 * host after a detour is merged into one hop on that host (its range is contiguous, so it covers the detour).
 */
import { NeuronError } from '../../protocol'
import { type BlockRange, CLIENT, type ServedSpan, type SwarmView } from '../swarm-view'

export interface RouteCosts {
  /** One-way latency assumed for a pair nobody has measured, in ms. */
  defaultLatencyMs: number
  /** Added per hop whose host is relayed: its frames take an extra trip through the tracker, in ms. */
  relayPenaltyMs: number
  /** Hosts with a lower reputation are used only when no other host serves their blocks. */
  minReputation: number
}

export const DEFAULT_ROUTE_COSTS: RouteCosts = { defaultLatencyMs: 40, relayPenaltyMs: 25, minReputation: 0.5 }

/** Per block on a low-reputation host: larger than any real route (hours per token), so the count of such blocks decides before time does. */
export const LOW_REPUTATION_PENALTY_MS = 1e7

export interface RouteRequest {
  /** KV-cache tokens the session needs in every hop (prompt + tokens to generate). */
  tokens: number
  /** Hosts that must not be used (a failed hop, hosts already on the route). */
  exclude?: ReadonlySet<string>
  /** Blocks to cover; default the whole model. A part of a route is a failover replacement. */
  span?: BlockRange
  /** Who sends the span's input: the client's id (default), or the host before the span on a route being repaired. */
  previousHop?: string
  /** Who receives the span's output: the client's id (default), or the host after the span. */
  nextHop?: string
}

export interface RouteHop {
  hostId: string
  /** The blocks this hop computes: its host's range or part of it. */
  blocks: BlockRange
  /** Expected compute time for one decode token through this hop, load included, in ms. */
  computeMs: number
  relay: boolean
}

export interface PlannedRoute {
  blocks: BlockRange
  hops: RouteHop[]
  /** Expected time per decode token: compute + latency of every link + relay penalties, in ms. */
  expectedMsPerToken: number
}

/**
 * How much slower a decode step runs on a host already serving others. A host declares how many
 * sessions it runs at once (maxSessions); batched decode is memory-bound, so a full host is taken as
 * twice as slow per token as an idle one, growing linearly in between.
 */
export function loadFactor(span: Pick<ServedSpan, 'activeSessions' | 'maxSessions'>): number {
  return 1 + Math.min(1, span.activeSessions / Math.max(1, span.maxSessions))
}

/** Expected ms per decode token for `blocks` blocks on this host at its current load. */
export function hopComputeMs(span: Pick<ServedSpan, 'msPerBlock' | 'activeSessions' | 'maxSessions'>, blocks: number): number {
  return span.msPerBlock * loadFactor(span) * blocks
}

/** A span the planner can use at all: sane numbers, a non-empty range inside the model. */
function usable(span: ServedSpan, nBlocks: number): boolean {
  const [begin, end] = span.blocks
  return (
    Number.isInteger(begin) && Number.isInteger(end) && begin >= 0 && begin < end && end <= nBlocks && span.msPerBlock > 0 && Number.isFinite(span.msPerBlock)
  )
}

const NONE = -2
/** Predecessor index for "the span's previous hop" (the client, or the host before a repaired span). */
const PREVIOUS = -1
/** How many of the cheapest arrivals each hop entry looks at before falling back to a scan. */
const TOP = 2

/**
 * Plans routes over one snapshot of a swarm. Building it compiles the snapshot into typed arrays (tens of ms
 * for 10 000 hosts, mostly looking up measured links by host id); each `plan` then runs one sweep of a few ms.
 * Build once per registry change (or per second under churn) and plan every session against it. A plan reads
 * each span's status, sessions and free KV afresh; speed, load factor and latencies are as of the build.
 */
export class RoutePlanner {
  private readonly nBlocks: number
  private readonly spans: ServedSpan[]
  private readonly view: SwarmView
  private readonly costs: RouteCosts
  private readonly indexOf = new Map<string, number>()
  private readonly begin: Int32Array
  private readonly end: Int32Array
  private readonly stepMs: Float64Array
  private readonly entryPenaltyMs: Float64Array
  // Measured links out of each host, compressed rows: g's links are outTo/outMs[outStart[g] .. outStart[g + 1]).
  private readonly outStart: Int32Array
  private readonly outTo: Int32Array
  private readonly outMs: Float64Array
  /** The cheapest link into each host: the default estimate or a faster measured one. */
  private readonly minInMs: Float64Array
  /** The cheapest measured link out of each host (infinite when none). */
  private readonly minOutMs: Float64Array
  // Hop entries, at stateBase[h] + boundary - begin[h]: the host that fed the hop, and where that host's own hop started.
  private readonly stateBase: Int32Array
  private readonly fromAt: Int32Array
  private readonly fromStartAt: Int32Array
  // Per-plan scratch, reused.
  private readonly eligible: Uint8Array
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

  constructor(view: SwarmView, costs: RouteCosts = DEFAULT_ROUTE_COSTS) {
    this.view = view
    this.costs = costs
    this.nBlocks = view.nBlocks
    // Hosts are numbered by begin block, then host id: ties break the same way whatever order the registry listed
    // hosts in, and the hosts covering a block sit close together in memory, which is most of the sweep's speed.
    this.spans = view.spans
      .filter((s) => usable(s, view.nBlocks))
      .sort((a, b) => a.blocks[0] - b.blocks[0] || (a.hostId < b.hostId ? -1 : a.hostId > b.hostId ? 1 : 0))
    const n = this.spans.length
    this.begin = new Int32Array(n)
    this.end = new Int32Array(n)
    this.stepMs = new Float64Array(n)
    this.entryPenaltyMs = new Float64Array(n)
    this.stateBase = new Int32Array(n)
    let states = 0
    for (let h = 0; h < n; h++) {
      const span = this.spans[h] as ServedSpan
      if (this.indexOf.has(span.hostId)) {
        throw new NeuronError('duplicate_host', `host ${span.hostId} appears twice in the swarm view; the registry must list one span per host and model`, {
          hostId: span.hostId,
        })
      }
      this.indexOf.set(span.hostId, h)
      this.begin[h] = span.blocks[0]
      this.end[h] = span.blocks[1]
      // Charged per block, so a low-reputation host serves only the blocks nobody else can.
      this.stepMs[h] = hopComputeMs(span, 1) + (span.reputation < costs.minReputation ? LOW_REPUTATION_PENALTY_MS : 0)
      this.entryPenaltyMs[h] = span.relay ? costs.relayPenaltyMs : 0
      this.stateBase[h] = states
      states += span.blocks[1] - span.blocks[0] + 1
    }

    // Links are listed by the table per receiver; the sweep pushes along them per sender. Typed buffers, grown by
    // doubling, keep this to a few ms for 10 000 hosts with a dozen measured links each.
    let linkFrom = new Int32Array(1024)
    let linkTo = new Int32Array(1024)
    let linkMs = new Float64Array(1024)
    let links = 0
    this.minInMs = new Float64Array(n).fill(costs.defaultLatencyMs)
    this.minOutMs = new Float64Array(n).fill(Number.POSITIVE_INFINITY)
    this.outStart = new Int32Array(n + 1)
    for (let h = 0; h < n; h++) {
      for (const [peer, latency] of view.latency.measuredInto((this.spans[h] as ServedSpan).hostId)) {
        const g = this.indexOf.get(peer)
        if (g === undefined || g === h || !(latency >= 0)) continue
        if (links === linkTo.length) {
          const grow = <T extends Int32Array | Float64Array>(from: T, to: T): T => {
            to.set(from)
            return to
          }
          linkFrom = grow(linkFrom, new Int32Array(links * 2))
          linkTo = grow(linkTo, new Int32Array(links * 2))
          linkMs = grow(linkMs, new Float64Array(links * 2))
        }
        linkFrom[links] = g
        linkTo[links] = h
        linkMs[links] = latency
        links++
        this.outStart[g + 1] = (this.outStart[g + 1] as number) + 1
        if (latency < (this.minInMs[h] as number)) this.minInMs[h] = latency
        if (latency < (this.minOutMs[g] as number)) this.minOutMs[g] = latency
      }
    }
    for (let g = 0; g < n; g++) this.outStart[g + 1] = (this.outStart[g + 1] as number) + (this.outStart[g] as number)
    this.outTo = new Int32Array(links)
    this.outMs = new Float64Array(links)
    const nextOut = this.outStart.slice(0, n)
    for (let k = 0; k < links; k++) {
      const at = nextOut[linkFrom[k] as number] as number
      this.outTo[at] = linkTo[k] as number
      this.outMs[at] = linkMs[k] as number
      nextOut[linkFrom[k] as number] = at + 1
    }
    // Fastest links first, so a push can stop at the first link too slow to matter. Rows are short: insertion sort.
    for (let g = 0; g < n; g++) {
      const first = this.outStart[g] as number
      for (let e = first + 1; e < (this.outStart[g + 1] as number); e++) {
        const to = this.outTo[e] as number
        const ms = this.outMs[e] as number
        let at = e
        while (at > first && (this.outMs[at - 1] as number) > ms) {
          this.outTo[at] = this.outTo[at - 1] as number
          this.outMs[at] = this.outMs[at - 1] as number
          at--
        }
        this.outTo[at] = to
        this.outMs[at] = ms
      }
    }

    this.fromStartAt = new Int32Array(states)
    this.fromAt = new Int32Array(states)
    this.eligible = new Uint8Array(n)
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

  /** The fastest route for the request; throws NeuronError 'no_route' naming the blocks nobody can serve. */
  plan(request: RouteRequest): PlannedRoute {
    const [spanBegin, spanEnd] = request.span ?? [0, this.nBlocks]
    if (!(Number.isInteger(spanBegin) && Number.isInteger(spanEnd) && spanBegin >= 0 && spanBegin < spanEnd && spanEnd <= this.nBlocks)) {
      throw new NeuronError(
        'bad_route_request',
        `cannot plan blocks [${spanBegin}, ${spanEnd}) of a ${this.nBlocks}-block model; ask for [a, b) with 0 ≤ a < b ≤ ${this.nBlocks}`,
        {
          span: [spanBegin, spanEnd],
          nBlocks: this.nBlocks,
        },
      )
    }
    if (!(request.tokens >= 0 && Number.isFinite(request.tokens))) {
      throw new NeuronError('bad_route_request', `a session needs a KV size of 0 or more tokens, got ${request.tokens}`, { tokens: request.tokens })
    }
    const previousHop = request.previousHop ?? CLIENT
    const nextHop = request.nextHop ?? CLIENT
    this.markEligible(request, spanBegin, spanEnd)

    const finalHost = this.sweep(spanBegin, spanEnd, previousHop, nextHop)
    if (finalHost === NONE) throw this.noRoute(request, spanBegin, spanEnd)
    return this.route(finalHost, spanBegin, spanEnd, previousHop, nextHop)
  }

  /** One pass over boundaries spanBegin..spanEnd; returns the last hop's host, or NONE when no route exists. */
  private sweep(spanBegin: number, spanEnd: number, previousHop: string, nextHop: string): number {
    const { cur, arrivalMs, arrivalStart, arrivals, active, hopStart, eligible, pushedMs, pushedFrom, pushedAt, topLinks, topLinksAt } = this
    const { outStart, outTo, outMs } = this
    const defaultMs = this.costs.defaultLatencyMs
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
      for (let k = 0; k < activeCount; k++) {
        const g = active[k] as number
        if ((this.end[g] as number) > b) active[kept++] = g
        const ms = cur[g] as number
        if (ms === Number.POSITIVE_INFINITY) continue
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
          const ms = (arrivalMs[g] as number) + this.linkMs(this.idOf(g), nextHop)
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
      while (nextToAdd < this.spans.length && (this.begin[nextToAdd] as number) <= b) {
        const h = nextToAdd++
        if (eligible[h] === 1 && (this.end[h] as number) > b) {
          active[activeCount++] = h
          cur[h] = Number.POSITIVE_INFINITY
        }
      }

      // Push arrivals along their measured links. An arrival costlier than the TOP-th cheapest plus the
      // default latency cannot beat the default link from one of the TOP cheapest, so it stays put.
      const pushBelow = topCount < TOP ? Number.POSITIVE_INFINITY : (arrivalMs[top[TOP - 1] as number] as number) + defaultMs
      for (let k = 0; k < arrivalCount; k++) {
        const g = arrivals[k] as number
        const ms = arrivalMs[g] as number
        if (ms >= pushBelow) continue
        let topBit = 0
        for (let t = 0; t < topCount; t++) if (top[t] === g) topBit = 1 << t
        if (topBit === 0 && ms + (this.minOutMs[g] as number) >= pushBelow) continue
        const last = outStart[g + 1] as number
        for (let e = outStart[g] as number; e < last; e++) {
          const via = ms + (outMs[e] as number)
          // Links are sorted: the rest cannot beat a default link either. The cheapest arrivals go on, to mark every link.
          if (via >= pushBelow && topBit === 0) break
          const h = outTo[e] as number
          if (eligible[h] === 0 || (this.begin[h] as number) > b || (this.end[h] as number) <= b) continue
          if (topBit !== 0) {
            // Remember which of the cheapest arrivals reach h by a measured link: their default estimate does not apply.
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
        const penalty = this.entryPenaltyMs[h] as number
        let entryMs = Number.POSITIVE_INFINITY
        let from = NONE
        if (b === spanBegin) {
          entryMs = this.linkMs(previousHop, this.idOf(h)) + penalty
          from = PREVIOUS
        } else if (continuing > cheapestArrival + (this.minInMs[h] as number) + penalty) {
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
              const ms = (arrivalMs[g] as number) + (this.measuredMs(g, h) ?? defaultMs)
              if (ms < entryMs) {
                entryMs = ms
                from = g
              }
            }
          }
          if (pushedAt[h] === b && (pushedMs[h] as number) < entryMs) {
            entryMs = pushedMs[h] as number
            from = pushedFrom[h] as number
          }
          entryMs += penalty
        }
        if (entryMs < continuing) {
          cur[h] = entryMs
          hopStart[h] = b
          const state = (this.stateBase[h] as number) + b - (this.begin[h] as number)
          this.fromAt[state] = from
          this.fromStartAt[state] = from >= 0 ? (arrivalStart[from] as number) : PREVIOUS
        }
        cur[h] = (cur[h] as number) + (this.stepMs[h] as number)
      }
    }

    return finalHost
  }

  private idOf(h: number): string {
    return (this.spans[h] as ServedSpan).hostId
  }

  private linkMs(from: string, to: string): number {
    if (from === to) return 0
    return this.view.latency.ms(from, to) ?? this.costs.defaultLatencyMs
  }

  private measuredMs(g: number, h: number): number | undefined {
    const last = this.outStart[g + 1] as number
    for (let e = this.outStart[g] as number; e < last; e++) if (this.outTo[e] === h) return this.outMs[e]
    return undefined
  }

  private markEligible(request: RouteRequest, spanBegin: number, spanEnd: number): void {
    const { eligible } = this
    for (let h = 0; h < this.spans.length; h++) {
      const span = this.spans[h] as ServedSpan
      eligible[h] =
        span.status === 'ready' &&
        span.activeSessions < span.maxSessions &&
        span.kvFreeTokens >= request.tokens &&
        (this.begin[h] as number) < spanEnd &&
        (this.end[h] as number) > spanBegin
          ? 1
          : 0
    }
    for (const id of request.exclude ?? []) {
      const h = this.indexOf.get(id)
      if (h !== undefined) eligible[h] = 0
    }
  }

  private route(last: number, spanBegin: number, spanEnd: number, previousHop: string, nextHop: string): PlannedRoute {
    const hops: RouteHop[] = []
    let host = last
    let start = this.finalStart
    let at = spanEnd
    // Each step goes back one non-empty hop, so this ends within the span's block count.
    while (host >= 0) {
      const span = this.spans[host] as ServedSpan
      hops.push({ hostId: span.hostId, blocks: [start, at], computeMs: hopComputeMs(span, at - start), relay: span.relay })
      const state = (this.stateBase[host] as number) + start - (this.begin[host] as number)
      host = this.fromAt[state] as number
      at = start
      start = this.fromStartAt[state] as number
    }
    hops.reverse()
    // A host keeps one KV cache per session, so it serves one hop per route. The search may return to a host
    // after a detour through faster ones (rare: two extra links must cost less than the blocks saved); its range
    // is contiguous, so it serves the detour's blocks too and the hops between merge into one.
    for (let i = 0; i < hops.length; i++) {
      const id = (hops[i] as RouteHop).hostId
      const again = hops.findLastIndex((hop) => hop.hostId === id)
      if (again <= i) continue
      const span = this.spans[this.indexOf.get(id) as number] as ServedSpan
      const blocks: BlockRange = [(hops[i] as RouteHop).blocks[0], (hops[again] as RouteHop).blocks[1]]
      hops.splice(i, again - i + 1, { hostId: id, blocks, computeMs: hopComputeMs(span, blocks[1] - blocks[0]), relay: span.relay })
    }
    // Report the time a user will see: penalties that only order the search (reputation) are left out.
    let expectedMsPerToken = 0
    let sender = previousHop
    for (const hop of hops) {
      expectedMsPerToken += this.linkMs(sender, hop.hostId) + hop.computeMs + (hop.relay ? this.costs.relayPenaltyMs : 0)
      sender = hop.hostId
    }
    expectedMsPerToken += this.linkMs(sender, nextHop)
    return { blocks: [spanBegin, spanEnd], hops, expectedMsPerToken }
  }

  private noRoute(request: RouteRequest, spanBegin: number, spanEnd: number): NeuronError {
    const covered = new Uint8Array(this.nBlocks)
    for (let h = 0; h < this.spans.length; h++) {
      if (this.eligible[h] === 0) continue
      for (let b = Math.max(spanBegin, this.begin[h] as number); b < Math.min(spanEnd, this.end[h] as number); b++) covered[b] = 1
    }
    const uncovered: [number, number][] = []
    for (let b = spanBegin; b < spanEnd; b++) {
      if (covered[b] === 1) continue
      const lastRange = uncovered.at(-1)
      if (lastRange !== undefined && lastRange[1] === b) lastRange[1] = b + 1
      else uncovered.push([b, b + 1])
    }
    // Why the hosts that do serve those blocks could not take the session, so the user knows whether to wait or add hosts.
    const unavailable: Record<string, number> = {}
    const excluded = request.exclude ?? new Set<string>()
    for (const span of this.spans) {
      const [begin, end] = span.blocks
      if (!uncovered.some(([a, b]) => begin < b && end > a)) continue
      const why = excluded.has(span.hostId)
        ? 'excluded'
        : span.status !== 'ready'
          ? span.status
          : span.activeSessions >= span.maxSessions
            ? 'no free session'
            : span.kvFreeTokens < request.tokens
              ? 'too little free KV'
              : 'other'
      unavailable[why] = (unavailable[why] ?? 0) + 1
    }
    const ranges = uncovered.map(([a, b]) => `[${a}, ${b})`).join(', ')
    const servedBy = Object.entries(unavailable)
      .map(([why, count]) => `${count} ${why}`)
      .join(', ')
    const message =
      `no route for blocks ${ranges} of ${this.nBlocks}: no ready host with a free session and ${request.tokens} free KV tokens serves them` +
      (servedBy === ''
        ? '; no host serves them at all, so a host must be placed there'
        : ` (the hosts that serve them: ${servedBy}); retry when one is free or add a host there`)
    return new NeuronError('no_route', message, { uncovered, span: [spanBegin, spanEnd], tokens: request.tokens, unavailable })
  }
}

/** Plan one route over a swarm snapshot. To plan many on the same snapshot, build one RoutePlanner and reuse it. */
export function planRoute(view: SwarmView, request: RouteRequest, costs: RouteCosts = DEFAULT_ROUTE_COSTS): PlannedRoute {
  return new RoutePlanner(view, costs).plan(request)
}
