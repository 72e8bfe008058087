import type Database from 'better-sqlite3'

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

/** Host checks and reputation tallies in the tracker's SQLite file; callers see no SQL. */
export class ChecksStore {
  private readonly getChecks: Database.Statement
  private readonly putChecks: Database.Statement
  private readonly getTally: Database.Statement
  private readonly putTally: Database.Statement

  constructor(db: Database.Database) {
    this.getChecks = db.prepare('select * from host_checks where host_id = ?')
    this.putChecks = db.prepare(
      `insert into host_checks values (@hostId, @probesPassed, @probesFailed, @auditsPassed, @auditsFailed, @banReason, @bannedAt, @measuredMsPerBlock, @lastProbeAt)
       on conflict(host_id) do update set probes_passed = excluded.probes_passed, probes_failed = excluded.probes_failed,
         audits_passed = excluded.audits_passed, audits_failed = excluded.audits_failed, ban_reason = excluded.ban_reason,
         banned_at = excluded.banned_at, measured_ms_per_block = excluded.measured_ms_per_block, last_probe_at = excluded.last_probe_at`,
    )
    this.getTally = db.prepare('select * from reputation_tallies where host_id = ?')
    this.putTally = db.prepare(
      `insert into reputation_tallies values (@hostId, @completed, @failed, @samples, @onlineSamples, @latency)
       on conflict(host_id) do update set completed = excluded.completed, failed = excluded.failed, samples = excluded.samples,
         online_samples = excluded.online_samples, latency = excluded.latency`,
    )
  }

  checks(hostId: string): StoredChecks | undefined {
    const r = this.getChecks.get(hostId) as Record<string, number | string | null> | undefined
    if (r === undefined) return undefined
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

  saveChecks(c: StoredChecks): void {
    this.putChecks.run(c)
  }

  tally(hostId: string): StoredTally | undefined {
    const r = this.getTally.get(hostId) as Record<string, number> | undefined
    if (r === undefined) return undefined
    return { completed: r.completed ?? 0, failed: r.failed ?? 0, samples: r.samples ?? 0, onlineSamples: r.online_samples ?? 0, latency: r.latency ?? 1 }
  }

  saveTally(hostId: string, t: StoredTally): void {
    this.putTally.run({ hostId, completed: t.completed, failed: t.failed, samples: t.samples, onlineSamples: t.onlineSamples, latency: t.latency })
  }
}
