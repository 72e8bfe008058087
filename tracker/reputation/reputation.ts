import type { ChecksStore } from '../checks/checks-store'
import type { HostRegistry } from '../hosts/registry'
import type { ReputationHistory } from './reputation-history'

/** Each component is 0..1; 1 is a host that does everything right. */
export interface ReputationComponents {
  /** Share of the tracker's samples in which the host was online since it joined. */
  readonly uptime: number
  /**
   * Completed steps over completed + failed (receipts it signed
   * that the route refutes), with a prior of a few good steps.
   */
  readonly completion: number
  /** Advertised compute time against the round trips clients measured, capped at 1. */
  readonly latency: number
  /** Known-answer probes and audits of real steps passed, with a prior; 0 once banned. */
  readonly audits: number
}

export interface HostReputation {
  readonly hostId: string
  readonly score: number
  readonly components: ReputationComponents
  readonly completedSteps: number
  readonly failedSteps: number
}

/** How uptime and latency shape the score; completion and audits multiply it, so failing either can sink any host. */
const WEIGHTS = { base: 0.4, uptime: 0.3, latency: 0.3 } as const
/** A host on probation scores at most this: under the planner's 0.5 cut-off, so it is routed last. */
const PROBATION_SCORE = 0.45
/** A new host starts as if it had completed this many steps: one failure does not sink it. */
const PRIOR_STEPS = 20
/** Network time a round trip may add on top of compute before it counts against a host, ms. */
const LATENCY_ALLOWANCE_MS = 5
const HISTORY_EVERY_MS = 10_000

interface Tally {
  completed: number
  failed: number
  samples: number
  onlineSamples: number
  /** Exponentially weighted ratio of advertised to observed time per step. */
  latency: number
  lastRecorded: number
}

/** What reputation asks of the tracker's checks (tracker/checks): audits, probation, and where tallies are kept. */
export interface ReputationChecks {
  readonly store: ChecksStore
  auditsScore(hostId: string): number
  onProbation(hostId: string): boolean
  /** Probes the host now (a lie bans it); `askedByClient`: a pass does not shorten its probation. */
  probeNow?(hostId: string, askedByClient?: boolean): Promise<unknown>
}

/** A host is probed on a client's failover claim at most this often, whatever the number of clients claiming. */
const PROBE_ON_CLAIM_MS = 30_000
/** Client keys remembered per host as having claimed a failover from it. */
const MAX_CLAIMANTS = 1024

/**
 * A score per host: completion² × audits × (base + uptime + latency against its advertised speed).
 * The planner routes scores under 0.5 last; probation caps the score under that; a ban makes it 0.
 * Tallies are kept in the tracker's store, so a restart does not wipe a host's record.
 */
export class Reputation {
  private readonly tallies = new Map<string, Tally>()
  /** Per host: the keys that claimed a failover from it (one vote each), and when a claim last probed it. */
  private readonly claims = new Map<string, { keys: Set<string>; probedAt: number }>()
  private writes: Promise<void> = Promise.resolve()
  private readonly timer: NodeJS.Timeout

  constructor(
    /** Where each host's score is recorded now and then, for its dashboard. */
    private readonly historyStore: ReputationHistory,
    private readonly registry: HostRegistry,
    sampleMs = 5_000,
    private readonly checks?: ReputationChecks,
  ) {
    this.timer = setInterval(() => this.sampleUptime(), sampleMs)
    this.timer.unref()
  }

  completed(hostId: string, steps = 1): void {
    this.tally(hostId).completed += steps
    this.maybeRecord(hostId)
  }

  failed(hostId: string, steps = 1): void {
    this.tally(hostId).failed += steps
    this.record(hostId)
  }

  /**
   * A client says it failed over from the host. Its word alone is no evidence (it may have caused the failure, or
   * made it up): it counts against no tally. A key's first claim against a host asks for a probe of it (at most one
   * per PROBE_ON_CLAIM_MS per host), so a host that really fails is found by the tracker's own check; a key claiming
   * again adds nothing. Returns whether a probe was asked for.
   */
  failoverClaimed(hostId: string, clientKey: string, now = Date.now()): boolean {
    const c = this.claims.get(hostId) ?? { keys: new Set<string>(), probedAt: Number.NEGATIVE_INFINITY }
    this.claims.set(hostId, c)
    if (c.keys.has(clientKey) || c.keys.size >= MAX_CLAIMANTS) return false
    c.keys.add(clientKey)
    if (now - c.probedAt < PROBE_ON_CLAIM_MS || this.checks?.probeNow === undefined) return false
    c.probedAt = now
    this.checks.probeNow(hostId, true).catch(() => {})
    return true
  }

  /** A client's measured round trip to a hop for one decode step, against what the host advertises. */
  observedLatency(hostId: string, blocks: number, medianMs: number): void {
    const advertised = this.registry.get(hostId)?.state.msPerBlock
    if (advertised == null || medianMs <= 0) return
    const ratio = Math.min(1, (advertised * blocks + LATENCY_ALLOWANCE_MS) / medianMs)
    const t = this.tally(hostId)
    t.latency = 0.8 * t.latency + 0.2 * ratio
    this.maybeRecord(hostId)
  }

  of(hostId: string): HostReputation {
    // Any id may be asked for on a dashboard: only hosts the tracker knows get a tally kept in memory.
    const t =
      this.tallies.get(hostId) ?? (this.registry.get(hostId) === undefined ? this.read(hostId) : this.tally(hostId))
    const components: ReputationComponents = {
      uptime: t.samples === 0 ? 1 : t.onlineSamples / t.samples,
      completion: (t.completed + PRIOR_STEPS) / (t.completed + t.failed + PRIOR_STEPS),
      latency: t.latency,
      audits: this.checks?.auditsScore(hostId) ?? 1,
    }
    const shape = WEIGHTS.base + WEIGHTS.uptime * components.uptime + WEIGHTS.latency * components.latency
    // Squared: a host failing a third of its steps costs its users a failover every few tokens, and falls under 0.5.
    const raw = components.completion ** 2 * components.audits * shape
    const score = this.checks?.onProbation(hostId) ? Math.min(PROBATION_SCORE, raw) : raw
    return { hostId, score, components, completedSteps: t.completed, failedSteps: t.failed }
  }

  /** The score alone, 0..1, for the route planner. */
  score(hostId: string): number {
    return this.of(hostId).score
  }

  /** Reads the host's tally from the store into memory (a host's hello does this before it is routed). */
  async load(hostId: string): Promise<void> {
    if (this.tallies.has(hostId)) return
    const stored = await this.checks?.store.tally(hostId)
    if (!this.tallies.has(hostId)) this.tallies.set(hostId, { ...fresh(), ...stored })
  }

  history(hostId: string, limit?: number) {
    return this.historyStore.of(hostId, limit)
  }

  close(): void {
    clearInterval(this.timer)
    for (const [hostId, t] of this.tallies) this.persist(() => this.checks?.store.saveTally(hostId, t))
  }

  /** Resolves once every tally and history row written so far is stored. */
  flushed(): Promise<void> {
    return this.writes
  }

  private tally(hostId: string): Tally {
    let t = this.tallies.get(hostId)
    if (t === undefined) {
      t = this.read(hostId)
      this.tallies.set(hostId, t)
    }
    return t
  }

  /** A host not loaded: a fresh tally (`load` reads a known host's from the store). */
  private read(_hostId: string): Tally {
    return fresh()
  }

  /**
   * Writes in order, and never throw into the caller: a lost history row costs a dashboard a point, not the tracker.
   */
  private persist(write: () => Promise<void> | undefined): void {
    // a thunk, started after the writes before it: started early,
    // a later write could reject unhandled (and end the process)
    this.writes = this.writes.then(write).catch(() => {})
  }

  private sampleUptime(): void {
    for (const h of this.registry.summaries()) {
      const t = this.tally(h.hostId)
      t.samples++
      if (h.online) t.onlineSamples++
    }
  }

  private maybeRecord(hostId: string): void {
    if (Date.now() - this.tally(hostId).lastRecorded >= HISTORY_EVERY_MS) this.record(hostId)
  }

  private record(hostId: string): void {
    const t = this.tally(hostId)
    // Strictly later than the host's last row: the history reads
    // newest first, and two rows in one millisecond would tie.
    const now = Math.max(Date.now(), t.lastRecorded + 1)
    const r = this.of(hostId)
    t.lastRecorded = now
    const tally = { ...t }
    this.persist(() => this.checks?.store.saveTally(hostId, tally))
    this.persist(() =>
      this.historyStore.record(hostId, now, r.score, {
        ...r.components,
        completedSteps: r.completedSteps,
        failedSteps: r.failedSteps,
      }),
    )
  }
}

function fresh(): Tally {
  return { completed: 0, failed: 0, samples: 0, onlineSamples: 0, latency: 1, lastRecorded: 0 }
}
