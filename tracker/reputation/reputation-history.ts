import type { Sql } from '../db/sql'

/** A host's score at one moment, with what made it up (ReputationComponents and its step counts). */
export interface ReputationPoint {
  readonly at: number
  readonly score: number
  readonly components: Record<string, number>
}

/** Hosts' past reputation scores in the tracker's store, for their dashboards. */
export class ReputationHistory {
  constructor(private readonly db: Sql) {}

  async record(hostId: string, at: number, score: number, components: Record<string, number>): Promise<void> {
    await this.db.run('insert into reputation_history (host_id, at, score, components) values (?, ?, ?, ?)', [
      hostId,
      at,
      score,
      JSON.stringify(components),
    ])
  }

  /** The host's latest points, newest first. */
  async of(hostId: string, limit = 100): Promise<ReputationPoint[]> {
    const rows = await this.db.all<{ at: number; score: number; components: string }>(
      'select * from reputation_history where host_id = ? order by at desc limit ?',
      [hostId, limit],
    )
    return rows.map((r) => ({ at: r.at, score: r.score, components: JSON.parse(r.components) }))
  }
}
