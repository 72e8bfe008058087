/**
 * One swarm snapshot compiled for route search: hosts numbered, each with its block range, its cost per
 * block and per hop entry, and the measured links out of it as compressed rows sorted by latency.
 */
import { NeuronError } from '../../protocol'
import { byHostId, type RouteCosts, relayMs, searchStepMs, usableSpan } from './costs'
import type { ServedSpan, SwarmView } from './swarm-view'

export class RouteGraph {
  readonly nBlocks: number
  readonly costs: RouteCosts
  /** The usable spans, by begin block then host id; a host's number is its index here. */
  readonly spans: ServedSpan[]
  readonly indexOf = new Map<string, number>()
  readonly begin: Int32Array
  readonly end: Int32Array
  /** 1 at each boundary 0..nBlocks where a hop may start or end. */
  readonly cuts: Uint8Array
  /** Search cost of one block on each host (see searchStepMs). */
  readonly stepMs: Float64Array
  /** Added when a hop starts on each host over a link nobody measured (a measured one holds it: a relay's trip). */
  readonly entryPenaltyMs: Float64Array
  /** The largest of entryPenaltyMs. */
  readonly maxEntryPenaltyMs: number
  /** Where each host's search states start: one per boundary of its range, begin..end. */
  readonly stateBase: Int32Array
  readonly states: number
  // Measured links out of each host, compressed rows: g's links are outTo/outMs[outStart[g] .. outStart[g + 1]).
  readonly outStart: Int32Array
  readonly outTo: Int32Array
  readonly outMs: Float64Array
  /** The cheapest link into each host: the default estimate or a faster measured one. */
  readonly minInMs: Float64Array
  /** The cheapest measured link out of each host (infinite when none). */
  readonly minOutMs: Float64Array
  private readonly view: SwarmView

  constructor(view: SwarmView, costs: RouteCosts) {
    this.view = view
    this.costs = costs
    this.nBlocks = view.nBlocks
    this.cuts = view.cuts?.length === view.nBlocks + 1 ? view.cuts : new Uint8Array(view.nBlocks + 1).fill(1)
    // Hosts are numbered by begin block, then host id: ties break the same way whatever order the registry listed
    // hosts in, and the hosts covering a block sit close together in memory, which is most of the sweep's speed.
    this.spans = view.spans
      .filter((s) => usableSpan(s, view.nBlocks))
      .sort((a, b) => a.blocks[0] - b.blocks[0] || byHostId(a, b))
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
        throw new NeuronError(
          'duplicate_host',
          `host ${span.hostId} appears twice in the swarm view; the registry must list one span per host and model`,
          {
            hostId: span.hostId,
          },
        )
      }
      this.indexOf.set(span.hostId, h)
      this.begin[h] = span.blocks[0]
      this.end[h] = span.blocks[1]
      this.stepMs[h] = searchStepMs(span, costs)
      this.entryPenaltyMs[h] = relayMs(span, costs)
      this.stateBase[h] = states
      states += span.blocks[1] - span.blocks[0] + 1
    }
    this.states = states
    this.maxEntryPenaltyMs = this.entryPenaltyMs.reduce((a, b) => Math.max(a, b), 0)

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
  }

  get size(): number {
    return this.spans.length
  }

  idOf(h: number): string {
    return (this.spans[h] as ServedSpan).hostId
  }

  /** One-way latency between two peers by id: measured, or the default estimate; 0 to itself. */
  linkMs(from: string, to: string): number {
    if (from === to) return 0
    return this.view.latency.ms(from, to) ?? this.costs.defaultLatencyMs
  }

  /** The measured latency from peer `from` to peer `to`, if any. */
  measuredLinkMs(from: string, to: string): number | undefined {
    return from === to ? 0 : this.view.latency.ms(from, to)
  }

  /** The measured latency from host g to host h, if any. */
  measuredMs(g: number, h: number): number | undefined {
    const last = this.outStart[g + 1] as number
    for (let e = this.outStart[g] as number; e < last; e++) if (this.outTo[e] === h) return this.outMs[e]
    return undefined
  }
}
