/**
 * Route planning: which hosts, serving which sub-ranges, carry a session's hidden states
 * through blocks [a, b) fastest.
 *
 * Cost of a route, in expected ms per decode token (the rules are in costs.ts):
 *   Σ hops (msPerBlock × blocks in the hop × load factor)  — compute
 * + Σ links (latency previous → hop1 → … → hopN → next)     — network, measured or the default estimate
 * + relay cost per hop whose host is behind a relay and whose link is not measured (one measured is measured through
 *   the relay, by ping frame: it holds the relay's trip already).
 * Blocks on hosts under the reputation threshold carry a penalty larger than any real route, so those
 * hosts serve only the blocks nothing else serves.
 *
 * The snapshot is compiled once (route-graph.ts) and searched per request (route-search.ts). The route found is
 * the fastest, but for the rare merged detour: a host keeps one KV cache per session, so a route uses it for one
 * hop, and a route that would come back to a host after a detour is merged into one hop on that host (its range
 * is contiguous, so it covers the detour).
 */
import { type BlockRange, NeuronError, type Route } from '../../protocol'
import { DEFAULT_ROUTE_COSTS, hopComputeMs, type RouteCosts, relayMs } from './costs'
import { RouteGraph } from './route-graph'
import { RouteSearch, type SearchedHop } from './route-search'
import { CLIENT, type ServedSpan, type SwarmView } from './swarm-view'

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
  /**
   * The latency id of a client that relays every hop itself (the swarm client sends each hop its input and
   * reads its answer): each hop then costs the round trip client → host → client, measured or twice the
   * default, in place of the links between hosts, which its frames never cross.
   */
  relayedBy?: string
}

export interface RouteHop {
  hostId: string
  /** The blocks this hop computes: its host's range or part of it. */
  blocks: BlockRange
  /** Expected compute time for one decode token through this hop, load included, in ms. */
  computeMs: number
  relay: boolean
  /** Through a volunteer relay (swarm-view's viaRelay): its hop is priced by the relay's measured round trips. */
  viaRelay?: ServedSpan['viaRelay']
}

export interface PlannedRoute {
  blocks: BlockRange
  hops: RouteHop[]
  /** Expected time per decode token: compute + latency of every link + relay penalties, in ms. */
  expectedMsPerToken: number
}

/**
 * Plans routes over one snapshot of a swarm. Building it compiles the snapshot into typed arrays (tens of ms
 * for 10 000 hosts, mostly looking up measured links by host id); each `plan` then runs one sweep of a few ms.
 * Build once per registry change (or per second under churn) and plan every session against it. A plan reads
 * each span's status, sessions and free KV afresh; speed, load factor and latencies are as of the build.
 */
export class RoutePlanner {
  private readonly graph: RouteGraph
  private readonly search: RouteSearch
  /** Per plan: 1 for each host that can take the session. */
  private readonly eligible: Uint8Array
  /** Per relayed plan: each host's round trip from the client, less the default link the search charges it. */
  private readonly relayEntryMs: Float64Array
  /**
   * A relayed round trip this planner charges a host its client has not measured (relayEntries sets it per request).
   */
  private unmeasuredRoundTripMs = 0

  constructor(view: SwarmView, costs: RouteCosts = DEFAULT_ROUTE_COSTS) {
    this.graph = new RouteGraph(view, costs)
    this.search = new RouteSearch(this.graph)
    this.eligible = new Uint8Array(this.graph.size)
    this.relayEntryMs = new Float64Array(this.graph.size)
  }

  /** The fastest route for the request; throws NeuronError 'no_route' naming the blocks nobody can serve. */
  plan(request: RouteRequest): PlannedRoute {
    const { nBlocks } = this.graph
    const [spanBegin, spanEnd] = request.span ?? [0, nBlocks]
    if (
      !(
        Number.isInteger(spanBegin) &&
        Number.isInteger(spanEnd) &&
        spanBegin >= 0 &&
        spanBegin < spanEnd &&
        spanEnd <= nBlocks
      )
    ) {
      throw new NeuronError(
        'bad_route_request',
        `cannot plan blocks [${spanBegin}, ${spanEnd}) of a ${nBlocks}-block model; ask for [a, b) with 0 ≤ a < b ` +
          `≤ ${nBlocks}`,
        {
          span: [spanBegin, spanEnd],
          nBlocks,
        },
      )
    }
    const { cuts } = this.graph
    if (cuts[spanBegin] === 0 || cuts[spanEnd] === 0) {
      throw new NeuronError(
        'bad_route_request',
        `cannot plan blocks [${spanBegin}, ${spanEnd}): the model's manifest allows no cut at boundary ` +
          `${cuts[spanBegin] === 0 ? spanBegin : spanEnd}; ask for a span between allowed cuts`,
        { span: [spanBegin, spanEnd], nBlocks },
      )
    }
    if (!(request.tokens >= 0 && Number.isFinite(request.tokens))) {
      throw new NeuronError(
        'bad_route_request',
        `a session needs a KV size of 0 or more tokens, got ${request.tokens}`,
        { tokens: request.tokens },
      )
    }
    const previousHop = request.previousHop ?? CLIENT
    const nextHop = request.nextHop ?? CLIENT
    this.markEligible(request, spanBegin, spanEnd)

    const relayed = request.relayedBy === undefined ? undefined : this.relayEntries(request.relayedBy)
    const found = this.search.fastest(this.eligible, spanBegin, spanEnd, previousHop, nextHop, relayed)
    if (found === undefined) throw this.noRoute(request, spanBegin, spanEnd)
    return this.route(found, spanBegin, spanEnd, previousHop, nextHop, request.relayedBy)
  }

  /**
   * A hop's round trip from the client that relays it: measured (a host behind a relay is measured through it, by ping
   * frame, so the relay is in the figure); else, behind a volunteer relay, the client's measured round trip to the
   * relay plus the relay's to the host; else `unmeasuredRoundTripMs` (set by relayEntries) plus the relay's cost.
   */
  private hopRoundTripMs(client: string, h: number): number {
    const span = this.graph.spans[h] as ServedSpan
    const measured = this.measuredRoundTripMs(client, span.hostId)
    if (measured !== undefined) return measured
    const via = span.viaRelay?.relayHostId
    const toRelay = via === undefined ? undefined : this.measuredRoundTripMs(client, via)
    return (toRelay ?? this.unmeasuredRoundTripMs) + relayMs(span, this.graph.costs)
  }

  private measuredRoundTripMs(client: string, hostId: string): number | undefined {
    const there = this.graph.measuredLinkMs(client, hostId)
    const back = this.graph.measuredLinkMs(hostId, client)
    return there === undefined && back === undefined ? undefined : (there ?? back ?? 0) + (back ?? there ?? 0)
  }

  /**
   * The search charges every route n + 1 links for n hops, each at the default when unmeasured between hosts.
   * Adding (round trip − default) per hop makes its cost Σ round trips + one default: the same constant for
   * every route of the span, so the order of routes is the relayed one.
   */
  private relayEntries(client: string): Float64Array {
    const { spans } = this.graph
    // a host this client has not measured is taken as typical of the ones it has (their median round trip), so a
    // newcomer still gets traffic (and is measured); with none measured, twice the default one-way estimate
    const measured: number[] = []
    for (let h = 0; h < spans.length; h++) {
      const ms = this.eligible[h] === 1 ? this.measuredRoundTripMs(client, (spans[h] as ServedSpan).hostId) : undefined
      if (ms !== undefined) measured.push(ms)
    }
    measured.sort((a, b) => a - b)
    this.unmeasuredRoundTripMs = measured[Math.floor(measured.length / 2)] ?? 2 * this.graph.costs.defaultLatencyMs
    for (let h = 0; h < spans.length; h++) {
      this.relayEntryMs[h] =
        this.eligible[h] === 1 ? this.hopRoundTripMs(client, h) - this.graph.costs.defaultLatencyMs : 0
    }
    return this.relayEntryMs
  }

  /** Counts a session on each of these hosts, so the plans after it, until the next build, see them fuller. */
  routed(hostIds: readonly string[]): void {
    for (const id of hostIds) {
      const h = this.graph.indexOf.get(id)
      if (h !== undefined) (this.graph.spans[h] as ServedSpan).activeSessions++
    }
  }

  private markEligible(request: RouteRequest, spanBegin: number, spanEnd: number): void {
    const { eligible } = this
    const { spans, begin, end } = this.graph
    for (let h = 0; h < spans.length; h++) {
      const span = spans[h] as ServedSpan
      eligible[h] =
        span.status === 'ready' &&
        span.activeSessions < span.maxSessions &&
        span.kvFreeTokens >= request.tokens &&
        (begin[h] as number) < spanEnd &&
        (end[h] as number) > spanBegin
          ? 1
          : 0
    }
    for (const id of request.exclude ?? []) {
      const h = this.graph.indexOf.get(id)
      if (h !== undefined) eligible[h] = 0
    }
  }

  private route(
    found: SearchedHop[],
    spanBegin: number,
    spanEnd: number,
    previousHop: string,
    nextHop: string,
    relayedBy?: string,
  ): PlannedRoute {
    const { spans, indexOf } = this.graph
    const hops: RouteHop[] = found.map(({ host, begin, end }) => {
      const span = spans[host] as ServedSpan
      return { hostId: span.hostId, blocks: [begin, end], computeMs: hopComputeMs(span, end - begin), ...relayOf(span) }
    })
    // A host keeps one KV cache per session, so it serves one hop per route. The search may return to a host
    // after a detour through faster ones (rare: two extra links must cost less than the blocks saved); its range
    // is contiguous, so it serves the detour's blocks too and the hops between merge into one.
    for (let i = 0; i < hops.length; i++) {
      const id = (hops[i] as RouteHop).hostId
      const again = hops.findLastIndex((hop) => hop.hostId === id)
      if (again <= i) continue
      const span = spans[indexOf.get(id) as number] as ServedSpan
      const blocks: BlockRange = [(hops[i] as RouteHop).blocks[0], (hops[again] as RouteHop).blocks[1]]
      hops.splice(i, again - i + 1, {
        hostId: id,
        blocks,
        computeMs: hopComputeMs(span, blocks[1] - blocks[0]),
        ...relayOf(span),
      })
    }
    // Report the time a user will see: penalties that only order the search (reputation) are left out.
    let expectedMsPerToken = 0
    if (relayedBy !== undefined) {
      for (const hop of hops)
        expectedMsPerToken += this.hopRoundTripMs(relayedBy, indexOf.get(hop.hostId) as number) + hop.computeMs
      return { blocks: [spanBegin, spanEnd], hops, expectedMsPerToken }
    }
    let sender = previousHop
    for (const hop of hops) {
      // a measured link into a relayed host was measured through its relay
      const measured = this.graph.measuredLinkMs(sender, hop.hostId)
      expectedMsPerToken +=
        (measured ?? this.graph.costs.defaultLatencyMs + relayMs(hop, this.graph.costs)) + hop.computeMs
      sender = hop.hostId
    }
    expectedMsPerToken += this.graph.linkMs(sender, nextHop)
    return { blocks: [spanBegin, spanEnd], hops, expectedMsPerToken }
  }

  private noRoute(request: RouteRequest, spanBegin: number, spanEnd: number): NeuronError {
    const { nBlocks, spans } = this.graph
    const covered = new Uint8Array(nBlocks)
    for (let h = 0; h < spans.length; h++) {
      if (this.eligible[h] === 0) continue
      for (
        let b = Math.max(spanBegin, this.graph.begin[h] as number);
        b < Math.min(spanEnd, this.graph.end[h] as number);
        b++
      )
        covered[b] = 1
    }
    const uncovered: [number, number][] = []
    for (let b = spanBegin; b < spanEnd; b++) {
      if (covered[b] === 1) continue
      const lastRange = uncovered.at(-1)
      if (lastRange !== undefined && lastRange[1] === b) lastRange[1] = b + 1
      else uncovered.push([b, b + 1])
    }
    // Why the hosts that do serve those blocks could not take the
    // session, so the user knows whether to wait or add hosts.
    const unavailable: Record<string, number> = {}
    const excluded = request.exclude ?? new Set<string>()
    for (const span of spans) {
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
    if (uncovered.length === 0) {
      const forbidden = [...this.graph.cuts.keys()].filter(
        (b) => b > spanBegin && b < spanEnd && this.graph.cuts[b] === 0,
      )
      return new NeuronError(
        'no_route',
        `no route for blocks [${spanBegin}, ${spanEnd}) of ${nBlocks}: ready hosts serve every block, but no chain ` +
          `of them changes hosts only where the ` +
          `manifest allows a cut (not at ${forbidden.join(', ')}); add a host whose range starts and ends at ` +
          `allowed cuts`,
        { uncovered, span: [spanBegin, spanEnd], tokens: request.tokens, forbiddenCuts: forbidden },
      )
    }
    const ranges = uncovered.map(([a, b]) => `[${a}, ${b})`).join(', ')
    const servedBy = Object.entries(unavailable)
      .map(([why, count]) => `${count} ${why}`)
      .join(', ')
    const message =
      `no route for blocks ${ranges} of ${nBlocks}: no ready host with a free session and ${request.tokens} free ` +
      `KV tokens serves them` +
      (servedBy === ''
        ? '; no host serves them at all, so a host must be placed there'
        : ` (the hosts that serve them: ${servedBy}); retry when one is free or add a host there`)
    return new NeuronError('no_route', message, {
      uncovered,
      span: [spanBegin, spanEnd],
      tokens: request.tokens,
      unavailable,
    })
  }
}

/** Plan one route over a swarm snapshot. To plan many on the same snapshot, build one RoutePlanner and reuse it. */
export function planRoute(
  view: SwarmView,
  request: RouteRequest,
  costs: RouteCosts = DEFAULT_ROUTE_COSTS,
): PlannedRoute {
  return new RoutePlanner(view, costs).plan(request)
}

function relayOf(span: ServedSpan): Pick<RouteHop, 'relay' | 'viaRelay'> {
  return span.viaRelay === undefined ? { relay: span.relay } : { relay: span.relay, viaRelay: span.viaRelay }
}

/** One line for a log: each hop's host, blocks and how it is reached, and the expected ms per token. */
export function describeRoute(route: Pick<Route, 'hops' | 'expectedMsPerToken'>): string {
  const hops = route.hops.map((h) => {
    const reached =
      h.via !== undefined
        ? `via relay ${h.via.relayHostId}`
        : h.endpoint === null
          ? 'via the tracker'
          : `at ${h.endpoint}`
    return `${h.hostId} [${h.blocks[0]}, ${h.blocks[1]}) ${reached}`
  })
  return `${hops.join(' -> ')}; expected ${route.expectedMsPerToken.toFixed(1)} ms per token`
}
