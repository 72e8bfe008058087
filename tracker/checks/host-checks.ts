import { EventEmitter } from 'node:events'
import { type HostChecksView, NeuronError } from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import type { ChecksOptions, HostChecksEvents } from './checks-options'
import type { ChecksStore, StoredChecks } from './checks-store'
import type { ProbeOutcome, Prober } from './prober'

export type { ChecksOptions, HostChecksEvents } from './checks-options'

/** Round trip a step may add to compute before a speed claim counts as false, ms. */
const NETWORK_ALLOWANCE_MS = 5
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
/** Different clients whose audits must outvote a host (that passes its probes) before it is banned. */
const STRIKES_TO_BAN = 3
/** Prior passes in the audits component: one failure is a ban anyway, so this only shapes new hosts' figure. */
const PRIOR_PASSES = 5

/**
 * What the tracker knows of each host's honesty: known-answer probes before it is routed and at
 * random times after, audits of real steps, probation for new keys, bans. Routing asks `eligible`
 * and `msPerBlock`; reputation asks `auditsScore`; the checks are kept in the tracker's store.
 */
export class HostChecks extends EventEmitter<HostChecksEvents> {
  private readonly cache = new Map<string, StoredChecks>()
  /** The (model, blocks) each host last passed a probe for: routed only while it serves that. */
  private readonly verifiedFor = new Map<string, string>()
  private readonly timers = new Map<string, NodeJS.Timeout>()
  private readonly probing = new Map<string, Promise<ProbeOutcome>>()
  /** Probes passed that a client's audit asked for, per host (not counted toward probation). */
  private readonly askedPasses = new Map<string, number>()
  /** Inconclusive probes in a row, per host. */
  private readonly inconclusive = new Map<string, number>()
  /** Clients whose audits outvoted each host (a ban needs STRIKES_TO_BAN of them). */
  private readonly strikes = new Map<string, Set<string>>()
  private closed = false
  private saving: Promise<void> = Promise.resolve()
  readonly options: Required<ChecksOptions> & { auditRate: number }

  constructor(
    readonly store: ChecksStore,
    private readonly registry: HostRegistry,
    private readonly prober: Prober,
    options: ChecksOptions = {},
    private readonly log: (line: string) => void = () => {},
  ) {
    super()
    const envRate = Number(process.env.NEURON_AUDIT_RATE)
    this.options = {
      probationProbes: options.probationProbes ?? 3,
      probationProbeEveryMs: options.probationProbeEveryMs ?? 30_000,
      probeEveryMs: options.probeEveryMs ?? 600_000,
      auditRate:
        options.auditRate ??
        (process.env.NEURON_AUDIT_RATE !== undefined && envRate >= 0 && envRate <= 1 ? envRate : 0.05),
      probationAuditRate: options.probationAuditRate ?? 0.5,
      speedClaimFactor: options.speedClaimFactor ?? 4,
      auditsPerMinute: options.auditsPerMinute ?? 600,
      auditProbeReuseMs: options.auditProbeReuseMs ?? 30_000,
    }
    registry.on('changed', (hostId) => this.onChanged(hostId))
  }

  /**
   * Reads every banned host's checks (at start): a ban holds
   * before the host says hello again, and no payment reaches it.
   */
  async loadBanned(): Promise<void> {
    for (const c of await this.store.banned()) if (!this.cache.has(c.hostId)) this.cache.set(c.hostId, c)
  }

  /**
   * What the host passed a probe for (`<modelId>@<from>-<to>`): this
   * instance's probe, or for a host another instance holds, that one's.
   */
  verifiedKey(hostId: string): string | null {
    const host = this.registry.get(hostId)
    return (host !== undefined && host.owner !== null ? host.verifiedFor : this.verifiedFor.get(hostId)) ?? null
  }

  /** Reads the host's record again: another instance changed it (a ban, say). */
  async reload(hostId: string): Promise<void> {
    this.cache.delete(hostId)
    await this.load(hostId)
  }

  /**
   * Reads the host's record from the store into memory: a host's hello does this before it is routed, a
   * dashboard before it shows one. Only hosts the store knows are kept, so random ids grow nothing.
   */
  async load(hostId: string): Promise<void> {
    if (this.cache.has(hostId)) return
    const stored = await this.store.checks(hostId)
    if (stored !== undefined && !this.cache.has(hostId)) this.cache.set(hostId, stored)
  }

  /** The view a dashboard shows (after `load`). */
  of(hostId: string): HostChecksView {
    const c = this.get(hostId)
    const advertised = this.registry.get(hostId)?.state.msPerBlock ?? null
    return {
      probesPassed: c.probesPassed,
      probesFailed: c.probesFailed,
      auditsPassed: c.auditsPassed,
      auditsFailed: c.auditsFailed,
      probation: this.onProbation(hostId),
      probationLeft: Math.max(0, this.options.probationProbes - c.probesPassed),
      ban: c.banReason === null ? null : { reason: c.banReason, at: c.bannedAt ?? 0 },
      measuredMsPerBlock: c.measuredMsPerBlock,
      advertisedMsPerBlock: advertised,
      speedMarked: this.speedMarked(hostId),
      lastProbeAt: c.lastProbeAt,
    }
  }

  banned(hostId: string): boolean {
    return this.get(hostId).banReason !== null
  }

  /**
   * Until it has passed `probationProbes` of the tracker's own
   * scheduled probes (those a client's audit asked for do not count).
   */
  onProbation(hostId: string): boolean {
    return this.get(hostId).probesPassed - (this.askedPasses.get(hostId) ?? 0) < this.options.probationProbes
  }

  /**
   * May the planner route this host: not banned, and (when its model has probes) it passed one for the
   * model and blocks it serves now.
   */
  eligible(hostId: string): boolean {
    if (this.banned(hostId)) return false
    const host = this.registry.get(hostId)
    if (host?.state.modelId == null || host.state.blocks === null) return false
    if (!this.prober.hasProbes(host.state.modelId)) return true
    if (this.verifiedKey(hostId) === servedKey(host.state.modelId, host.state.blocks)) return true
    // Another instance holds it: that instance probes it, and says when it passed.
    if (host.owner !== null) return false
    // Never probed for this (say its model got probes after it joined): probe it now.
    if (host.online && host.state.status === 'ready' && !this.probing.has(hostId) && !this.timers.has(hostId))
      this.schedule(hostId, 0)
    return false
  }

  /** The speed routing uses: what the probes measured on what the host serves now, else what it says. */
  msPerBlock(hostId: string, advertised: number): number {
    const state = this.registry.get(hostId)?.state
    const current =
      state?.modelId != null &&
      state.blocks !== null &&
      this.verifiedKey(hostId) === servedKey(state.modelId, state.blocks)
    return current ? (this.get(hostId).measuredMsPerBlock ?? advertised) : advertised
  }

  /** The audits component of reputation: 0 when banned, else passes over checks with a prior. */
  auditsScore(hostId: string): number {
    const c = this.get(hostId)
    if (c.banReason !== null) return 0
    const passed = c.probesPassed + c.auditsPassed + PRIOR_PASSES
    return passed / (passed + c.probesFailed + c.auditsFailed)
  }

  /** Changes the audit rate of hosts out of probation from now on (an operator's knob; the benchmark's). */
  setAuditRate(rate: number): void {
    if (!(rate >= 0 && rate <= 1))
      throw new NeuronError('bad_option', `an audit rate is a fraction from 0 to 1, not ${rate}`)
    this.options.auditRate = rate
  }

  /**
   * Fraction of this host's steps the client `clientId` should have re-run elsewhere. None when the host is the
   * client's own key (the app's host serving its own chats): audits guard a client against other people's hosts,
   * and a host lying to itself harms nobody else, while each audit holds the chat for a re-run.
   */
  auditRate(hostId: string, clientId?: string): number {
    if (hostId === clientId) return 0
    return this.onProbation(hostId) ? this.options.probationAuditRate : this.options.auditRate
  }

  /**
   * Resolves once a host that just said it is ready has been probed for what it serves (at once when
   * its model has no probes or it passed already); throws `banned` when it lied.
   */
  async whenReady(hostId: string): Promise<void> {
    // Bounded: the host's call waits 30 s at most; a probe still running then goes on, and routes follow its pass.
    const deadline = Date.now() + READY_WAIT_MS
    for (let attempt = 0; attempt < 3 && Date.now() < deadline; attempt++) {
      if (this.banned(hostId)) throw banned(this.get(hostId).banReason)
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
      const outcome = await Promise.race([this.probeNow(hostId), late]).finally(() => clearTimeout(timer))
      if (this.banned(hostId)) throw banned(this.get(hostId).banReason)
      if (outcome === undefined || outcome.inconclusive) {
        this.log(
          `host ${hostId} is not routed until a probe gets ` +
            `through${outcome === undefined ? '' : `: ${outcome.reason}`}`,
        )
        return
      }
    }
  }

  /**
   * Probes the host now (one probe at a time per host); a lie bans it. `askedByClient`: an audit asked
   * for it, so a pass does not shorten probation (clients cannot hurry a host through it).
   */
  probeNow(hostId: string, askedByClient = false): Promise<ProbeOutcome> {
    const running = this.probing.get(hostId)
    if (running !== undefined) return running
    const run = this.runProbe(hostId).finally(() => this.probing.delete(hostId))
    this.probing.set(hostId, run)
    if (askedByClient)
      void run.then(
        (o) => {
          if (o.passed && this.registry.get(hostId) !== undefined)
            this.askedPasses.set(hostId, (this.askedPasses.get(hostId) ?? 0) + 1)
        },
        () => {},
      )
    return run
  }

  /**
   * An audit of a real step agreed with the host, or two other hosts outvoted it. A failure is a strike;
   * strikes from STRIKES_TO_BAN different clients ban the host (one client cannot ban a host alone).
   */
  recordAudit(hostId: string, passed: boolean, reason: string, clientKey = ''): void {
    const c = this.get(hostId)
    this.save({
      ...c,
      auditsPassed: c.auditsPassed + (passed ? 1 : 0),
      auditsFailed: c.auditsFailed + (passed ? 0 : 1),
    })
    if (passed) return
    const by = this.strikes.get(hostId) ?? new Set<string>()
    if (by.size < STRIKES_TO_BAN) by.add(clientKey)
    this.strikes.set(hostId, by)
    if (by.size >= STRIKES_TO_BAN) this.ban(hostId, `${reason} (outvoted in audits asked by ${by.size} clients)`)
  }

  /** Bans a host for good (its key): never routed again; listeners void its pending earnings. */
  ban(hostId: string, reason: string, now = Date.now()): void {
    const c = this.get(hostId)
    if (c.banReason !== null) return
    this.save({ ...c, banReason: reason, bannedAt: now })
    this.verifiedFor.delete(hostId)
    clearTimeout(this.timers.get(hostId))
    this.log(`host ${hostId} banned: ${reason}`)
    this.emit('banned', hostId, reason)
  }

  close(): void {
    this.closed = true
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
  }

  /**
   * Resolves once every record saved so far is in the store (a ban
   * included): the tracker waits for it before closing the store.
   */
  flushed(): Promise<void> {
    return this.saving
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
      if (missed >= MAX_INCONCLUSIVE) this.verifiedFor.delete(hostId)
      return outcome
    }
    this.inconclusive.delete(hostId)
    const c = this.get(hostId)
    const measured =
      outcome.msPerBlock === null ? c.measuredMsPerBlock : smooth(c.measuredMsPerBlock, outcome.msPerBlock)
    this.save({
      ...c,
      probesPassed: c.probesPassed + (outcome.passed ? 1 : 0),
      probesFailed: c.probesFailed + (outcome.passed ? 0 : 1),
      measuredMsPerBlock: measured,
      lastProbeAt: Date.now(),
    })
    if (!outcome.passed) {
      this.ban(hostId, outcome.reason)
      return outcome
    }
    // Still serving what was probed: from now on it may be routed.
    const after = this.registry.get(hostId)
    const now = after?.online ? after.state : undefined
    if (now?.modelId === modelId && now.blocks?.[0] === blocks[0] && now.blocks[1] === blocks[1]) {
      const first = this.verifiedFor.get(hostId) !== servedKey(modelId, blocks)
      this.verifiedFor.set(hostId, servedKey(modelId, blocks))
      if (first) this.emit('verified', hostId)
    }
    if (this.speedMarked(hostId))
      this.log(
        `host ${hostId} claims ${host.state.msPerBlock} ms per block; the probes measured ${measured?.toFixed(2)}`,
      )
    return outcome
  }

  /** The host claims far more speed than its probes show (network allowance included). */
  private speedMarked(hostId: string): boolean {
    const host = this.registry.get(hostId)
    const measured = this.get(hostId).measuredMsPerBlock
    const claimed = host?.state.msPerBlock
    const blocks = host?.state.blocks
    if (measured == null || claimed == null || blocks == null) return false
    const n = blocks[1] - blocks[0]
    return measured * n > this.options.speedClaimFactor * (claimed * n + NETWORK_ALLOWANCE_MS)
  }

  /** A host that is ready is probed at once, then again at random times (sooner while on probation). */
  private onChanged(hostId: string): void {
    const host = this.registry.get(hostId)
    if (this.closed || host === undefined || this.banned(hostId)) return
    // Probes are the holding instance's: a host that moved away is no longer probed from here.
    if (host.owner !== null) {
      clearTimeout(this.timers.get(hostId))
      this.timers.delete(hostId)
      return
    }
    const { state } = host
    if (!host.online || state.status !== 'ready' || state.modelId === null || state.blocks === null) {
      clearTimeout(this.timers.get(hostId))
      this.timers.delete(hostId)
      // A host that left may come back with other weights: it is probed again before it is routed.
      if (!host.online) this.verifiedFor.delete(hostId)
      return
    }
    if (!this.prober.hasProbes(state.modelId)) return
    if (this.verifiedFor.get(hostId) !== servedKey(state.modelId, state.blocks) && !this.probing.has(hostId))
      this.schedule(hostId, 0)
    else if (!this.timers.has(hostId)) this.schedule(hostId, this.nextWait(hostId))
  }

  private schedule(hostId: string, waitMs: number): void {
    clearTimeout(this.timers.get(hostId))
    const timer = setTimeout(() => {
      this.timers.delete(hostId)
      void this.probeNow(hostId).then(
        () => {
          const host = this.registry.get(hostId)
          if (
            this.closed ||
            !host?.online ||
            host.state.status !== 'ready' ||
            this.banned(hostId) ||
            this.timers.has(hostId)
          )
            return
          const { modelId, blocks } = host.state
          const verified =
            modelId !== null && blocks !== null && this.verifiedFor.get(hostId) === servedKey(modelId, blocks)
          this.schedule(hostId, verified ? this.nextWait(hostId) : RETRY_MS)
        },
        (e: Error) => this.log(`probe of ${hostId} failed here: ${e.message}`),
      )
    }, waitMs)
    timer.unref()
    this.timers.set(hostId, timer)
  }

  /** Exponential waits: a host cannot tell when the next probe comes. */
  private nextWait(hostId: string): number {
    const mean = this.onProbation(hostId) ? this.options.probationProbeEveryMs : this.options.probeEveryMs
    return Math.min(10 * mean, -mean * Math.log(1 - Math.random()))
  }

  /**
   * A host's record as loaded (`load`), else a fresh one; kept in memory only for hosts the registry knows (any id may
   * be asked for on a dashboard).
   */
  private get(hostId: string): StoredChecks {
    let c = this.cache.get(hostId)
    if (c === undefined) {
      c = {
        hostId,
        probesPassed: 0,
        probesFailed: 0,
        auditsPassed: 0,
        auditsFailed: 0,
        banReason: null,
        bannedAt: null,
        measuredMsPerBlock: null,
        lastProbeAt: null,
      }
      if (this.registry.get(hostId) !== undefined) this.cache.set(hostId, c)
    }
    return c
  }

  private save(c: StoredChecks): void {
    this.cache.set(c.hostId, c)
    // In order: a later record never lands before an earlier one.
    this.saving = this.saving
      .then(() => this.store.saveChecks(c))
      .catch((e: Error) => this.log(`saving the checks of host ${c.hostId} failed: ${e.message}`))
  }
}

function banned(reason: string | null): NeuronError {
  return new NeuronError(
    'banned',
    `this host is banned from the swarm: ${reason ?? 'it lied'}. A banned key is never routed again.`,
  )
}

function servedKey(modelId: string, blocks: readonly [number, number]): string {
  return `${modelId}:${blocks[0]}-${blocks[1]}`
}

/** Recent probes count most: a host that slows down is routed by its speed now. */
function smooth(previous: number | null, measured: number): number {
  return previous === null ? measured : 0.5 * previous + 0.5 * measured
}
