import { EventEmitter } from 'node:events'
import { type HostChecksView, NeuronError } from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import { CheckRecords } from './check-records'
import { type ChecksOptions, checksOptionsWithDefaults, type HostChecksEvents } from './checks-options'
import type { ChecksStore, StoredChecks } from './checks-store'
import { HostProbes, servedKey } from './host-probes'
import type { ProbeOutcome, Prober } from './prober'

export type { ChecksOptions, HostChecksEvents } from './checks-options'

/** Round trip a step may add to compute before a speed claim counts as false, ms. */
const NETWORK_ALLOWANCE_MS = 5
/** Different clients whose audits must outvote a host (that passes its probes) before it is banned. */
const STRIKES_TO_BAN = 3
/** Prior passes in the audits component: one failure is a ban anyway, so this only shapes new hosts' figure. */
const PRIOR_PASSES = 5

/**
 * What the tracker knows of each host's honesty: known-answer probes before it is routed and at
 * random times after (HostProbes), audits of real steps, probation for new keys, bans. Routing asks `eligible`
 * and `msPerBlock`; reputation asks `auditsScore`; the checks are kept in the tracker's store.
 */
export class HostChecks extends EventEmitter<HostChecksEvents> {
  private readonly records: CheckRecords
  private readonly probes: HostProbes
  /** Probes passed that a client's audit asked for, per host (not counted toward probation). */
  private readonly askedPasses = new Map<string, number>()
  /** Clients whose audits outvoted each host (a ban needs STRIKES_TO_BAN of them). */
  private readonly strikes = new Map<string, Set<string>>()
  readonly options: Required<ChecksOptions> & { auditRate: number }

  constructor(
    readonly store: ChecksStore,
    private readonly registry: HostRegistry,
    private readonly prober: Prober,
    options: ChecksOptions = {},
    private readonly log: (line: string) => void = () => {},
  ) {
    super()
    this.options = checksOptionsWithDefaults(options, process.env)
    this.records = new CheckRecords(store, (hostId) => registry.get(hostId) !== undefined, log)
    this.probes = new HostProbes(
      registry,
      prober,
      this.records,
      this.options,
      {
        onProbation: (hostId) => this.onProbation(hostId),
        ban: (hostId, reason) => this.ban(hostId, reason),
        verified: (hostId) => this.emit('verified', hostId),
        speedMarked: (hostId) => this.speedMarked(hostId),
      },
      log,
    )
    registry.on('changed', (hostId) => this.probes.onChanged(hostId))
  }

  /**
   * Reads every banned host's checks (at start): a ban holds
   * before the host says hello again, and no payment reaches it.
   */
  loadBanned(): Promise<void> {
    return this.records.loadBanned()
  }

  /**
   * What the host passed a probe for (`<modelId>@<from>-<to>`): this
   * instance's probe, or for a host another instance holds, that one's.
   */
  verifiedKey(hostId: string): string | null {
    const host = this.registry.get(hostId)
    return (host !== undefined && host.owner !== null ? host.verifiedFor : this.probes.verified(hostId)) ?? null
  }

  /** Reads the host's record again: another instance changed it (a ban, say). */
  reload(hostId: string): Promise<void> {
    return this.records.reload(hostId)
  }

  /**
   * Reads the host's record from the store into memory: a host's hello does this before it is routed, a
   * dashboard before it shows one. Only hosts the store knows are kept, so random ids grow nothing.
   */
  load(hostId: string): Promise<void> {
    return this.records.load(hostId)
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
    this.probes.probeSoon(hostId)
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
   * The chance that the client `clientId` has this host's session audited. None when the host is the client's own key
   * (the app's host serving its own chats): audits guard a client against other people's hosts, and a host lying to
   * itself harms nobody else, while each audit costs another host a re-run.
   */
  auditRate(hostId: string, clientId?: string): number {
    if (hostId === clientId) return 0
    return this.onProbation(hostId) ? this.options.probationAuditRate : this.options.auditRate
  }

  /**
   * Resolves once a host that just said it is ready has been probed for what it serves (at once when
   * its model has no probes or it passed already); throws `banned` when it lied.
   */
  whenReady(hostId: string): Promise<void> {
    return this.probes.whenReady(hostId)
  }

  /**
   * Probes the host now (one probe at a time per host); a lie bans it. `askedByClient`: an audit asked
   * for it, so a pass does not shorten probation (clients cannot hurry a host through it).
   */
  probeNow(hostId: string, askedByClient = false): Promise<ProbeOutcome> {
    if (!askedByClient) return this.probes.probeNow(hostId)
    return this.probes.probeNow(hostId, (o) => {
      if (o.passed && this.registry.get(hostId) !== undefined)
        this.askedPasses.set(hostId, (this.askedPasses.get(hostId) ?? 0) + 1)
    })
  }

  /**
   * An audit of a real step agreed with the host, or two other hosts outvoted it. A failure is a strike;
   * strikes from STRIKES_TO_BAN different clients ban the host (one client cannot ban a host alone).
   */
  recordAudit(hostId: string, passed: boolean, reason: string, clientKey = ''): void {
    const c = this.get(hostId)
    this.records.save({
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
    this.records.save({ ...c, banReason: reason, bannedAt: now })
    this.probes.forget(hostId)
    this.log(`host ${hostId} banned: ${reason}`)
    this.emit('banned', hostId, reason)
  }

  close(): void {
    this.probes.close()
  }

  /**
   * Resolves once every record saved so far is in the store (a ban
   * included): the tracker waits for it before closing the store.
   */
  flushed(): Promise<void> {
    return this.records.flushed()
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

  /** A host's record (CheckRecords.get): as loaded, else a fresh one. */
  private get(hostId: string): StoredChecks {
    return this.records.get(hostId)
  }
}
