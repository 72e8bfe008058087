/**
 * What placement and routing read about a swarm: one snapshot of who serves which blocks of one
 * model, how fast, how loaded, and how far apart. The registry builds it; the planners never
 * touch the database or the network, so they are pure functions of this view.
 */
import type { BlockRange } from '../../protocol'

export type ServingStatus = 'ready' | 'loading' | 'downloading' | 'draining'

/** One host serving one model. */
export interface ServedSpan {
  hostId: string
  /** Blocks [begin, end) it has loaded and can serve; a route may use any sub-range of them. */
  blocks: BlockRange
  /** Measured compute time per block per decode token, in ms, with no other session running. */
  msPerBlock: number
  /** True when the host cannot accept connections and its frames go through the tracker's relay. */
  relay: boolean
  /**
   * Set when a volunteer relay carries its frames instead of the tracker: the hop then costs the client's round trip to
   * the relay plus the relay's measured round trip to the host (null: not measured yet, the default link's twice).
   */
  viaRelay?: { relayHostId: string; relayToHostMs: number | null }
  activeSessions: number
  maxSessions: number
  /** Free KV-cache capacity, in tokens, in every block it serves. */
  kvFreeTokens: number
  /** 0..1 from uptime, completed steps and audits; hosts under the planner's threshold route last. */
  reputation: number
  status: ServingStatus
}

/** The id latency tables use for the session's client (the first hop's sender, the last hop's receiver). */
export const CLIENT = 'client'

/** One-way latency between peers, in ms, as measured; the planners use a default estimate for unmeasured pairs. */
export interface LatencyTable {
  ms(from: string, to: string): number | undefined
  /** Every measured link towards `to`, as [from, ms]: routing visits only these instead of all n² pairs. */
  measuredInto(to: string): Iterable<readonly [from: string, ms: number]>
}

/** A swarm for one model: its block count, the spans served, and the latencies between peers. */
export interface SwarmView {
  nBlocks: number
  spans: readonly ServedSpan[]
  latency: LatencyTable
  /**
   * 1 at each boundary 0..nBlocks where a hop may start or end
   * (the manifest's seams: allowedCuts); absent, every boundary.
   */
  cuts?: Uint8Array
}

/**
 * A LatencyTable over measurements kept in memory; `set` records one direction, `setBoth` the round trip split evenly.
 */
export class LatencyMatrix implements LatencyTable {
  private readonly into = new Map<string, Map<string, number>>()

  set(from: string, to: string, ms: number): this {
    let row = this.into.get(to)
    if (row === undefined) {
      row = new Map()
      this.into.set(to, row)
    }
    row.set(from, ms)
    return this
  }

  setBoth(a: string, b: string, ms: number): this {
    return this.set(a, b, ms).set(b, a, ms)
  }

  ms(from: string, to: string): number | undefined {
    return this.into.get(to)?.get(from)
  }

  measuredInto(to: string): Iterable<readonly [from: string, ms: number]> {
    return this.into.get(to)?.entries() ?? []
  }
}

/** A latency table that has measured nothing: every pair gets the planner's default estimate. */
export const NO_LATENCIES: LatencyTable = { ms: () => undefined, measuredInto: () => [] }
