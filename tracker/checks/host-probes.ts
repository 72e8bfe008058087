import { NeuronError } from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import type { CheckRecords } from './check-records'
import type { ChecksOptions } from './checks-options'
import type { ProbeOutcome, Prober } from './prober'

/**
 * How long a host's `ready` waits for its first probe before it is answered: well inside its call's
 * 30 s, and short, as a host that never answers its probe must not hold the call (it is then routed
 * only once a later probe passes).
 */
const READY_WAIT_MS = 10_000
/** Wait before probing again a host not yet verified for what it serves (its last probe was inconclusive). */
const RETRY_MS = 5_000
/** Inconclusive probes in a row after which a verified host is routed no more until one gets through. */
const MAX_INCONCLUSIVE = 3

/** What probing asks of the checks it feeds. */
export interface ProbeHooks {
  readonly onProbation: (hostId: string) => boolean
  /** A probe the host failed: a lie. */
  readonly ban: (hostId: string, reason: string) => void
  /** The host passed a probe for what it serves now, the first for that: it may be routed. */
  readonly verified: (hostId: string) => void
  /** The host claims far more speed than its probes show: logged after each probe. */
  readonly speedMarked: (hostId: string) => boolean
}

/**
 * When each host is probed and what a probe's outcome does: a host that is ready is probed at once, then again at
 * random times (sooner while on probation); a pass verifies what it serves, a lie bans it, an inconclusive probe is
 * retried. Only the instance that holds a host probes it.
 */
export class HostProbes {
  /** The (model, blocks) each host last passed a probe for: routed only while it serves that. */
  private readonly verifiedFor = new Map<string, string>()
  /** Each host's next probe, and when it is due. */
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; due: number }>()
  /** The probe running per host, and when it started. */
  private readonly probing = new Map<string, { run: Promise<ProbeOutcome>; at: number }>()
  /** Inconclusive probes in a row, per host. */
  private readonly inconclusive = new Map<string, number>()
  private closed = false

  constructor(
    private readonly registry: HostRegistry,
    private readonly prober: Prober,
    private readonly records: CheckRecords,
    private readonly options: Required<Pick<ChecksOptions, 'probationProbeEveryMs' | 'probeEveryMs'>>,
    private readonly hooks: ProbeHooks,
    private readonly log: (line: string) => void,
  ) {}

  /** What this instance last probed the host for and it passed (`<modelId>:<from>-<to>`), if anything. */
  verified(hostId: string): string | undefined {
    return this.verifiedFor.get(hostId)
  }

  /** Probes a ready host soon that no probe is running or waiting for (say its model got probes after it joined). */
  probeSoon(hostId: string): void {
    const host = this.registry.get(hostId)
    if (!host?.online || host.state.status !== 'ready' || this.probing.has(hostId)) return
    const next = this.timers.get(hostId)
    // a probe due soon (a retry) is kept; a random wait set while it was verified is not
    if (next === undefined || next.due > Date.now() + RETRY_MS) this.schedule(hostId, 0)
  }

  /** A banned host: never routed again, its next probe cancelled. */
  forget(hostId: string): void {
    this.verifiedFor.delete(hostId)
    this.cancel(hostId)
  }

  /**
   * Resolves once a host that just said it is ready has been probed for what it serves (at once when
   * its model has no probes or it passed already); throws `banned` when it lied.
   */
  async whenReady(hostId: string): Promise<void> {
    // Bounded: the host's call waits 30 s at most; a probe still running then goes on, and routes follow its pass.
    const since = Date.now()
    const deadline = since + READY_WAIT_MS
    for (let attempt = 0; attempt < 3 && Date.now() < deadline; attempt++) {
      if (this.banned(hostId)) throw banned(this.records.get(hostId).banReason)
      const state = this.registry.get(hostId)?.state
      if (
        state?.status !== 'ready' ||
        state.modelId === null ||
        state.blocks === null ||
        !this.prober.hasProbes(state.modelId)
      )
        return
      if (this.verifiedFor.get(hostId) === servedKey(state.modelId, state.blocks)) return
      // A probe already running may be of what the host served before: then another follows.
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))
      })
      // a probe begun before the host said so (an audit's, say, on the connection it had before it joined again)
      // speaks for that connection: a new one runs
      const outcome = await Promise.race([this.probeNow(hostId, undefined, since), late]).finally(() =>
        clearTimeout(timer),
      )
      if (this.banned(hostId)) throw banned(this.records.get(hostId).banReason)
      if (outcome === undefined || outcome.inconclusive) {
        this.retrySoon(hostId)
        this.log(
          `host ${hostId} is not routed until a probe gets ` +
            `through${outcome === undefined ? '' : `: ${outcome.reason}`}`,
        )
        return
      }
    }
  }

  /**
   * Probes the host now (one probe at a time per host, unless the one running began before `since`); a lie bans it.
   * `started` hears the outcome of a probe this call started, not of one already running.
   */
  probeNow(hostId: string, started?: (outcome: ProbeOutcome) => void, since?: number): Promise<ProbeOutcome> {
    const running = this.probing.get(hostId)
    if (running !== undefined && (since === undefined || running.at >= since)) return running.run
    const run: Promise<ProbeOutcome> = this.runProbe(hostId).finally(() => {
      if (this.probing.get(hostId)?.run === run) this.probing.delete(hostId)
    })
    this.probing.set(hostId, { run, at: Date.now() })
    if (started !== undefined) void run.then(started, () => {})
    return run
  }

  close(): void {
    this.closed = true
    for (const t of this.timers.values()) clearTimeout(t.timer)
    this.timers.clear()
  }

  private async runProbe(hostId: string): Promise<ProbeOutcome> {
    const host = this.registry.get(hostId)
    const { modelId, blocks } = host?.state ?? {}
    if (host === undefined || modelId == null || blocks == null || this.banned(hostId))
      return { passed: false, inconclusive: true, error: 0, reason: 'the host serves nothing now', msPerBlock: null }
    let outcome: ProbeOutcome
    try {
      outcome = await this.prober.probe(hostId, modelId, blocks)
    } catch (error) {
      // The tracker's own failure (a bad probe set, say): nobody is faulted for it.
      outcome = {
        passed: false,
        inconclusive: true,
        error: 0,
        reason: `the probe failed here: ${(error as Error).message}`,
        msPerBlock: null,
      }
    }
    if (outcome.inconclusive) {
      this.log(`probe of ${hostId} inconclusive: ${outcome.reason}`)
      // A host that keeps its probes from being answered is routed no more until one is. Being full is no excuse: a
      // host keeps probe slots past its sessions for the tracker's probes (PROBE_SLOTS in host/serving/admission.ts).
      const missed = (this.inconclusive.get(hostId) ?? 0) + 1
      this.inconclusive.set(hostId, missed)
      if (missed >= MAX_INCONCLUSIVE && this.verifiedFor.delete(hostId)) this.retrySoon(hostId)
      return outcome
    }
    this.inconclusive.delete(hostId)
    const c = this.records.get(hostId)
    const measured =
      outcome.msPerBlock === null ? c.measuredMsPerBlock : smooth(c.measuredMsPerBlock, outcome.msPerBlock)
    this.records.save({
      ...c,
      probesPassed: c.probesPassed + (outcome.passed ? 1 : 0),
      probesFailed: c.probesFailed + (outcome.passed ? 0 : 1),
      measuredMsPerBlock: measured,
      lastProbeAt: Date.now(),
    })
    if (!outcome.passed) {
      this.hooks.ban(hostId, outcome.reason)
      return outcome
    }
    // Still serving what was probed: from now on it may be routed.
    const after = this.registry.get(hostId)
    const now = after?.online ? after.state : undefined
    if (now?.modelId === modelId && now.blocks?.[0] === blocks[0] && now.blocks[1] === blocks[1]) {
      const first = this.verifiedFor.get(hostId) !== servedKey(modelId, blocks)
      this.verifiedFor.set(hostId, servedKey(modelId, blocks))
      if (first) this.hooks.verified(hostId)
    }
    if (this.hooks.speedMarked(hostId))
      this.log(
        `host ${hostId} claims ${host.state.msPerBlock} ms per block; the probes measured ${measured?.toFixed(2)}`,
      )
    return outcome
  }

  /** A host that is ready is probed at once, then again at random times (sooner while on probation). */
  onChanged(hostId: string): void {
    const host = this.registry.get(hostId)
    if (this.closed || host === undefined || this.banned(hostId)) return
    // Probes are the holding instance's: a host that moved away is no longer probed from here.
    if (host.owner !== null) {
      this.cancel(hostId)
      return
    }
    const { state } = host
    if (!host.online || state.status !== 'ready' || state.modelId === null || state.blocks === null) {
      this.cancel(hostId)
      // A host that left may come back with other weights: it is probed again before it is routed. A probe still
      // running speaks for the connection it left (an audit's, say, that waits out its timeout): the next is new.
      if (!host.online) {
        this.verifiedFor.delete(hostId)
        this.probing.delete(hostId)
      }
      return
    }
    if (!this.prober.hasProbes(state.modelId)) return
    if (this.verifiedFor.get(hostId) === servedKey(state.modelId, state.blocks)) {
      if (!this.timers.has(hostId)) this.schedule(hostId, this.nextWait(hostId))
    } else if (this.probing.has(hostId)) this.retrySoon(hostId)
    else this.schedule(hostId, 0)
  }

  /**
   * A host not verified for what it serves is probed again within RETRY_MS, whatever random wait was set while it was
   * verified: else a host unrouted by a network change or a few unanswered probes would wait out that wait (10 min on
   * average past probation) before anything routed it again.
   */
  private retrySoon(hostId: string): void {
    const next = this.timers.get(hostId)
    if (this.closed || (next !== undefined && next.due <= Date.now() + RETRY_MS)) return
    this.schedule(hostId, RETRY_MS)
  }

  private cancel(hostId: string): void {
    clearTimeout(this.timers.get(hostId)?.timer)
    this.timers.delete(hostId)
  }

  private schedule(hostId: string, waitMs: number): void {
    this.cancel(hostId)
    const timer = setTimeout(() => {
      this.timers.delete(hostId)
      void this.probeNow(hostId).then(
        () => {
          const host = this.registry.get(hostId)
          if (this.closed || !host?.online || host.state.status !== 'ready' || this.banned(hostId)) return
          const { modelId, blocks } = host.state
          const verified =
            modelId !== null && blocks !== null && this.verifiedFor.get(hostId) === servedKey(modelId, blocks)
          if (!verified) this.retrySoon(hostId)
          else if (!this.timers.has(hostId)) this.schedule(hostId, this.nextWait(hostId))
        },
        (e: Error) => this.log(`probe of ${hostId} failed here: ${e.message}`),
      )
    }, waitMs)
    timer.unref()
    this.timers.set(hostId, { timer, due: Date.now() + waitMs })
  }

  /** Exponential waits: a host cannot tell when the next probe comes. */
  private nextWait(hostId: string): number {
    const mean = this.hooks.onProbation(hostId) ? this.options.probationProbeEveryMs : this.options.probeEveryMs
    return Math.min(10 * mean, -mean * Math.log(1 - Math.random()))
  }

  private banned(hostId: string): boolean {
    return this.records.get(hostId).banReason !== null
  }
}

/** The key of what a host serves, as probes verify it. */
export function servedKey(modelId: string, blocks: readonly [number, number]): string {
  return `${modelId}:${blocks[0]}-${blocks[1]}`
}

function banned(reason: string | null): NeuronError {
  return new NeuronError(
    'banned',
    `this host is banned from the swarm: ${reason ?? 'it lied'}. A banned key is never routed again.`,
  )
}

/** Recent probes count most: a host that slows down is routed by its speed now. */
function smooth(previous: number | null, measured: number): number {
  return previous === null ? measured : 0.5 * previous + 0.5 * measured
}
