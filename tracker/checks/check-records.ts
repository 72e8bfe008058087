import type { ChecksStore, StoredChecks } from './checks-store'

/**
 * Each host's checks as the store keeps them, held in memory: saved in order, read once per host. Only hosts the
 * registry knows (or the store has) are held, so random ids asked for on a dashboard grow nothing.
 */
export class CheckRecords {
  private readonly cache = new Map<string, StoredChecks>()
  private saving: Promise<void> = Promise.resolve()

  constructor(
    private readonly store: ChecksStore,
    /** Whether the registry knows the host: a fresh record is held only then. */
    private readonly known: (hostId: string) => boolean,
    private readonly log: (line: string) => void,
  ) {}

  /** Reads every banned host's record (at start). */
  async loadBanned(): Promise<void> {
    for (const c of await this.store.banned()) if (!this.cache.has(c.hostId)) this.cache.set(c.hostId, c)
  }

  /** Reads the host's record again: another instance changed it (a ban, say). */
  async reload(hostId: string): Promise<void> {
    this.cache.delete(hostId)
    await this.load(hostId)
  }

  /** Reads the host's record from the store into memory, once; only hosts the store knows are kept. */
  async load(hostId: string): Promise<void> {
    if (this.cache.has(hostId)) return
    const stored = await this.store.checks(hostId)
    if (stored !== undefined && !this.cache.has(hostId)) this.cache.set(hostId, stored)
  }

  /**
   * A host's record as loaded (`load`), else a fresh one; kept in memory only for hosts the registry knows (any id may
   * be asked for on a dashboard).
   */
  get(hostId: string): StoredChecks {
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
      if (this.known(hostId)) this.cache.set(hostId, c)
    }
    return c
  }

  save(c: StoredChecks): void {
    this.cache.set(c.hostId, c)
    // In order: a later record never lands before an earlier one.
    this.saving = this.saving
      .then(() => this.store.saveChecks(c))
      .catch((e: Error) => this.log(`saving the checks of host ${c.hostId} failed: ${e.message}`))
  }

  /** Resolves once every record saved so far is in the store. */
  flushed(): Promise<void> {
    return this.saving
  }
}
