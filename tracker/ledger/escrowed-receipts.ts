import { REPLAY_STEP_BASE } from '../../protocol'
import type { Sql } from '../db/sql'

/** Where a receipt's host earnings are: in the host's escrow, on its settled account, or refunded to the payer. */
export type EscrowState = 'pending' | 'released' | 'voided'

/** A receipt still in escrow, with what voiding it must undo. */
export interface PendingReceipt {
  readonly key: string
  readonly session: string
  readonly hostId: string
  /** The consumer account that paid (null: nobody did). */
  readonly accountId: string | null
  /** Micro-credits the host earned (a replay: what it took from the failed host's escrow). */
  readonly earned: number
  /** What the consumer paid, and the swarm's fee out of it (0 for a replay). */
  readonly charged: number
  readonly fee: number
  /** Of `earned`, what replays have since moved to the hosts that replaced this one. */
  readonly forfeited: number
  /** On a replay: the failed host whose escrow paid for it. */
  readonly forfeitFrom: string | null
}

/** Hosts' pending earnings, receipt by receipt, in the ledger's database (the store's half of Escrow). */
export class EscrowedReceipts {
  constructor(private readonly db: Sql) {}

  /** Per host, what its receipts created at or before `cutoff` hold in escrow. */
  due(cutoff: number): Promise<{ hostId: string; micro: number; receipts: number }[]> {
    return this.db.all(
      `select host_id as "hostId", coalesce(sum(host_earned - forfeited), 0) as micro, count(*) as receipts
         from receipts where escrow = 'pending' and created_at <= ? group by host_id order by host_id`,
      [cutoff],
    )
  }

  markReleased(hostId: string, cutoff: number): Promise<number> {
    return this.db.run(
      `update receipts set escrow = 'released' where escrow = 'pending' and host_id = ? and created_at <= ?`,
      [hostId, cutoff],
    )
  }

  /** The host's own receipts still in escrow, oldest first. */
  async pendingOf(hostId: string): Promise<PendingReceipt[]> {
    return (await this.db.all<PendingRow>(`${SELECT_PENDING} and host_id = ? order by created_at, step`, [hostId])).map(
      fromRow,
    )
  }

  /** Replays by other hosts still in escrow that were paid from `hostId`'s escrow. */
  async pendingForfeitsFrom(hostId: string): Promise<PendingReceipt[]> {
    return (
      await this.db.all<PendingRow>(
        `${SELECT_PENDING} and forfeit_from = ? and host_id != ? order by created_at, step`,
        [hostId, hostId],
      )
    ).map(fromRow)
  }

  /** What the host's steps of `session` (replays aside) still hold in escrow: the most a replay may take from it. */
  async pendingFrom(session: string, hostId: string): Promise<number> {
    const row = await this.db.get<{ left: number }>(
      `select coalesce(sum(host_earned - forfeited), 0) as left from receipts
         where escrow = 'pending' and host_id = ? and session = ? and step < ?`,
      [hostId, session, REPLAY_STEP_BASE],
    )
    return row?.left ?? 0
  }

  /** Marks `micro` of the host's pending earnings in `session` as paid to a replay, oldest step first. */
  async forfeit(session: string, hostId: string, micro: number): Promise<void> {
    let left = micro
    for (const r of await this.sessionSteps(session, hostId, 'asc')) {
      const take = Math.min(left, r.host_earned - r.forfeited)
      if (take <= 0) continue
      await this.addForfeited(r.idempotency_key, take)
      left -= take
      if (left === 0) break
    }
  }

  /** Gives back up to `micro` of what replays took from the host's pending steps in `session`; returns how much was. */
  async unforfeit(session: string, hostId: string, micro: number): Promise<number> {
    let left = micro
    for (const r of await this.sessionSteps(session, hostId, 'desc')) {
      const give = Math.min(left, r.forfeited)
      if (give <= 0) continue
      await this.addForfeited(r.idempotency_key, -give)
      left -= give
      if (left === 0) break
    }
    return micro - left
  }

  async markVoided(keys: readonly string[], reason: string): Promise<void> {
    for (const key of keys)
      await this.db.run(
        `update receipts set escrow = 'voided', void_reason = ? where idempotency_key = ? and escrow = 'pending'`,
        [reason, key],
      )
  }

  async state(key: string): Promise<EscrowState | undefined> {
    return (await this.db.get<{ escrow: EscrowState }>('select escrow from receipts where idempotency_key = ?', [key]))
      ?.escrow
  }

  private sessionSteps(session: string, hostId: string, order: 'asc' | 'desc') {
    return this.db.all<{ idempotency_key: string; host_earned: number; forfeited: number }>(
      `select idempotency_key, host_earned, forfeited from receipts
         where escrow = 'pending' and host_id = ? and session = ? and step < ? order by created_at ${order}, step
           ${order}`,
      [hostId, session, REPLAY_STEP_BASE],
    )
  }

  private async addForfeited(key: string, micro: number): Promise<void> {
    await this.db.run('update receipts set forfeited = forfeited + ? where idempotency_key = ?', [micro, key])
  }
}

const SELECT_PENDING = `select idempotency_key, session, host_id, account_id, host_earned, coalesce(charged, 0) as
  charged, coalesce(fee, 0) as fee,
  forfeited, forfeit_from from receipts where escrow = 'pending'`

interface PendingRow {
  idempotency_key: string
  session: string
  host_id: string
  account_id: string | null
  host_earned: number
  charged: number
  fee: number
  forfeited: number
  forfeit_from: string | null
}

function fromRow(r: PendingRow): PendingReceipt {
  return {
    key: r.idempotency_key,
    session: r.session,
    hostId: r.host_id,
    accountId: r.account_id,
    earned: r.host_earned,
    charged: r.charged,
    fee: r.fee,
    forfeited: r.forfeited,
    forfeitFrom: r.forfeit_from,
  }
}

/**
 * The migration that escrows host earnings (appended to the store's list). Receipts settled before it
 * were paid to the host at once: 'released', with what their payer was charged unknown (null).
 */
export const ESCROW_SCHEMA = `alter table receipts add column escrow text not null default 'released';
   alter table receipts add column charged integer;
   alter table receipts add column fee integer;
   alter table receipts add column forfeited integer not null default 0;
   alter table receipts add column forfeit_from text;
   alter table receipts add column void_reason text;
   create index receipts_pending on receipts(host_id, created_at) where escrow = 'pending';`
