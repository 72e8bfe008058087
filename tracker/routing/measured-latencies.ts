/**
 * Client-to-host round trips as clients measure them, kept so that one lying client moves only its own
 * routes. The swarm client relays every hop itself (client → hop → client → next hop), so the links that
 * cost a session time are the ones between its client and each host; host-to-host links carry nothing today
 * and are not measured.
 *
 * Per (client, host) the matrix keeps the client's last few samples, each bounded, and uses their median
 * (one wild sample moves nothing). A client's routes use its own median. Clients that have not measured a
 * host use the swarm's: the median over reporting clients, one vote each, and only once QUORUM clients
 * have reported, so a lone liar cannot set it and a few cannot move it outside the honest clients' range.
 */
import { EventEmitter } from 'node:events'
import { MAX_ROUND_TRIP_MS } from '../../protocol'
import type { LatencyTable } from './swarm-view'

export interface LatencyMatrixOptions {
  /** Samples kept per (client, host); the estimate is their median. */
  readonly samplesPerLink: number
  /** Samples older than this are forgotten, ms. */
  readonly maxAgeMs: number
  /** A client is asked to measure a host again when its newest sample is older than this, ms. */
  readonly refreshMs: number
  /** Distinct clients that must have measured a host before their median applies to other clients. */
  readonly quorum: number
  /** A change smaller than this many ms and this fraction of the old value does not rebuild the planner. */
  readonly materialMs: number
  readonly materialRatio: number
}

export const DEFAULT_LATENCY_OPTIONS: LatencyMatrixOptions = {
  samplesPerLink: 8,
  maxAgeMs: 10 * 60_000,
  refreshMs: 60_000,
  quorum: 3,
  materialMs: 2,
  materialRatio: 0.2,
}

/** Clients one host keeps samples from; the least recently heard is dropped past it. */
const MAX_REPORTERS_PER_HOST = 1024

/** The id a client has in the latency table and in route requests (`relayedBy`), apart from host ids. */
export function clientLatencyId(nodeId: string): string {
  return `client:${nodeId}`
}

interface Link {
  /** Round trips, ms, oldest first, with when each arrived. */
  readonly ms: number[]
  readonly at: number[]
  /** The median as the planner last saw it. */
  published: number
}

export class MeasuredLatencies extends EventEmitter<{ changed: [hostId: string] }> implements LatencyTable {
  readonly options: LatencyMatrixOptions
  /** Per host, per client (node id): its samples. */
  private readonly links = new Map<string, Map<string, Link>>()
  /** Per host, the swarm's median round trip once a quorum reported. */
  private readonly consensus = new Map<string, number>()

  constructor(
    options: Partial<LatencyMatrixOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    super()
    this.options = { ...DEFAULT_LATENCY_OPTIONS, ...options }
  }

  /**
   * Records `reporter`'s round trips to `hostId`; a sample outside
   * [0, MAX_ROUND_TRIP_MS] or not a number is clamped or dropped.
   */
  record(reporter: string, hostId: string, roundTripsMs: readonly number[]): void {
    const now = this.now()
    let row = this.links.get(hostId)
    if (row === undefined) {
      row = new Map()
      this.links.set(hostId, row)
    }
    let link = row.get(reporter)
    if (link === undefined) {
      if (row.size >= MAX_REPORTERS_PER_HOST) row.delete(this.stalestReporter(row))
      link = { ms: [], at: [], published: Number.NaN }
      row.set(reporter, link)
    }
    for (const sample of roundTripsMs.slice(-this.options.samplesPerLink)) {
      if (!Number.isFinite(sample)) continue
      link.ms.push(Math.min(MAX_ROUND_TRIP_MS, Math.max(0, sample)))
      link.at.push(now)
    }
    const excess = link.ms.length - this.options.samplesPerLink
    if (excess > 0) {
      link.ms.splice(0, excess)
      link.at.splice(0, excess)
    }
    const estimate = median(link.ms)
    if (estimate === undefined || !this.material(link.published, estimate)) return
    link.published = estimate
    this.updateConsensus(hostId, row, now)
    this.emit('changed', hostId)
  }

  /** One-way ms between a client (`client:<id>`) and a host, either way round: half the round trip. */
  ms(from: string, to: string): number | undefined {
    const [client, host] = from.startsWith('client:')
      ? [from, to]
      : to.startsWith('client:')
        ? [to, from]
        : [undefined, undefined]
    if (client === undefined || host === undefined) return undefined
    const rtt = this.roundTrip(client.slice('client:'.length), host)
    return rtt === undefined ? undefined : rtt / 2
  }

  /** Host-to-host links are not measured (the client relays every hop), so no host has measured links into it. */
  measuredInto(): Iterable<readonly [from: string, ms: number]> {
    return []
  }

  /** The round trip routes for `reporter` assume to `hostId`: its own median, else the swarm's, else unknown. */
  roundTrip(reporter: string, hostId: string): number | undefined {
    const own = this.links.get(hostId)?.get(reporter)
    if (own !== undefined && this.fresh(own, this.now(), this.options.maxAgeMs)) return own.published
    return this.consensus.get(hostId)
  }

  /** Of `hostIds`, the ones `reporter` has not measured within refreshMs, at most `max`. */
  staleFor(reporter: string, hostIds: Iterable<string>, max: number): string[] {
    const now = this.now()
    const stale: string[] = []
    for (const hostId of hostIds) {
      if (stale.length >= max) break
      const link = this.links.get(hostId)?.get(reporter)
      if (link === undefined || !this.fresh(link, now, this.options.refreshMs)) stale.push(hostId)
    }
    return stale
  }

  private fresh(link: Link, now: number, ageMs: number): boolean {
    const newest = link.at.at(-1)
    return newest !== undefined && now - newest <= ageMs && !Number.isNaN(link.published)
  }

  private updateConsensus(hostId: string, row: Map<string, Link>, now: number): void {
    const votes: number[] = []
    for (const link of row.values()) if (this.fresh(link, now, this.options.maxAgeMs)) votes.push(link.published)
    const swarm = votes.length >= this.options.quorum ? median(votes) : undefined
    if (swarm === undefined) this.consensus.delete(hostId)
    else this.consensus.set(hostId, swarm)
  }

  private material(before: number, after: number): boolean {
    if (Number.isNaN(before)) return true
    const change = Math.abs(after - before)
    return change >= this.options.materialMs && change >= this.options.materialRatio * before
  }

  private stalestReporter(row: Map<string, Link>): string {
    let stalest = ''
    let oldest = Number.POSITIVE_INFINITY
    for (const [reporter, link] of row) {
      const newest = link.at.at(-1) ?? Number.NEGATIVE_INFINITY
      if (newest < oldest) {
        oldest = newest
        stalest = reporter
      }
    }
    return stalest
  }
}

/** The lower median: with two values, the smaller, so one of two reporters cannot raise a host's cost alone. */
function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]
}
