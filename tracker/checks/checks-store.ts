import type { Sql } from '../db/sql'

/** What the tracker's checks know of one host, kept across restarts. */
export interface StoredChecks {
  readonly hostId: string
  readonly probesPassed: number
  readonly probesFailed: number
  readonly auditsPassed: number
  readonly auditsFailed: number
  readonly banReason: string | null
  readonly bannedAt: number | null
  /** Per-block time of the probes' single-token steps, ms (null before the first probe passed). */
  readonly measuredMsPerBlock: number | null
  readonly lastProbeAt: number | null
}

/** The reputation's running counts for one host, kept across restarts. */
export interface StoredTally {
  readonly completed: number
  readonly failed: number
  readonly samples: number
  readonly onlineSamples: number
  readonly latency: number
}

/** The migration that adds the tables (appended to the store's list). */
export const CHECKS_SCHEMA = `create table host_checks (
     host_id text primary key,
     probes_passed integer not null,
     probes_failed integer not null,
     audits_passed integer not null,
     audits_failed integer not null,
     ban_reason text,
     banned_at integer,
     measured_ms_per_block real,
     last_probe_at integer
   );
   create table reputation_tallies (
     host_id text primary key,
     completed integer not null,
     failed integer not null,
     samples integer not null,
     online_samples integer not null,
     latency real not null
   );`

/** Host checks and reputation tallies in the tracker's database; callers see no SQL. */
export class ChecksStore {
  constructor(private readonly db: Sql) {}

  async checks(hostId: string): Promise<StoredChecks | undefined> {
    const r = await this.db.get<Record<string, number | string | null>>('select * from host_checks where host_id = ?', [
      hostId,
    ])
    return r === undefined ? undefined : storedChecks(hostId, r)
  }

  /** Every banned host's checks: a tracker reads them at start, so a ban holds before the host says hello again. */
  async banned(): Promise<StoredChecks[]> {
    const rows = await this.db.all<Record<string, number | string | null>>(
      'select * from host_checks where ban_reason is not null',
    )
    return rows.map((r) => storedChecks(String(r.host_id), r))
  }

  /**
   * Saves a host's checks; a ban is never cleared by a later
   * save (one from a record read before the ban, or never read).
   */
  async saveChecks(c: StoredChecks): Promise<void> {
    await this.db.run(
      `insert into host_checks (host_id, probes_passed, probes_failed, audits_passed, audits_failed, ban_reason,
        banned_at, measured_ms_per_block, last_probe_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (host_id) do update set probes_passed = excluded.probes_passed, probes_failed =
         excluded.probes_failed,
         audits_passed = excluded.audits_passed, audits_failed = excluded.audits_failed, ban_reason =
           coalesce(host_checks.ban_reason, excluded.ban_reason),
         banned_at = coalesce(host_checks.banned_at, excluded.banned_at), measured_ms_per_block =
           excluded.measured_ms_per_block, last_probe_at = excluded.last_probe_at`,
      [
        c.hostId,
        c.probesPassed,
        c.probesFailed,
        c.auditsPassed,
        c.auditsFailed,
        c.banReason,
        c.bannedAt,
        c.measuredMsPerBlock,
        c.lastProbeAt,
      ],
    )
  }

  async tally(hostId: string): Promise<StoredTally | undefined> {
    const r = await this.db.get<Record<string, number>>('select * from reputation_tallies where host_id = ?', [hostId])
    if (r === undefined) return undefined
    return {
      completed: r.completed ?? 0,
      failed: r.failed ?? 0,
      samples: r.samples ?? 0,
      onlineSamples: r.online_samples ?? 0,
      latency: r.latency ?? 1,
    }
  }

  async saveTally(hostId: string, t: StoredTally): Promise<void> {
    await this.db.run(
      `insert into reputation_tallies (host_id, completed, failed, samples, online_samples, latency) values (?, ?, ?,
        ?, ?, ?)
       on conflict (host_id) do update set completed = excluded.completed, failed = excluded.failed, samples =
         excluded.samples,
         online_samples = excluded.online_samples, latency = excluded.latency`,
      [hostId, t.completed, t.failed, t.samples, t.onlineSamples, t.latency],
    )
  }
}

function storedChecks(hostId: string, r: Record<string, number | string | null>): StoredChecks {
  return {
    hostId,
    probesPassed: Number(r.probes_passed),
    probesFailed: Number(r.probes_failed),
    auditsPassed: Number(r.audits_passed),
    auditsFailed: Number(r.audits_failed),
    banReason: r.ban_reason === null ? null : String(r.ban_reason),
    bannedAt: r.banned_at === null ? null : Number(r.banned_at),
    measuredMsPerBlock: r.measured_ms_per_block === null ? null : Number(r.measured_ms_per_block),
    lastProbeAt: r.last_probe_at === null ? null : Number(r.last_probe_at),
  }
}
