import { NeuronError } from '../../protocol'
import type { Sql } from '../db/sql'
import { consumerAccount } from './account-names'

/** A hold nobody charged or asked for again this long is released (its client is gone). */
export const HOLD_IDLE_MS = 15 * 60_000

/** Credits set aside for one session (routed for a client, or a gateway generation) until it ends. */
export interface StoredHold {
  readonly session: string
  readonly accountId: string
  readonly heldMicro: number
  readonly maxTokens: number
  readonly createdAt: number
}

/** What the store can refuse or size a new hold by: the account's balance less what its other live holds have left. */
export type SizeHold = (freeMicro: number) => { readonly heldMicro: number; readonly maxTokens: number }

/**
 * A hold with what its session's settled receipts charged the account and when it was last active. Charges
 * come from the ledger, whichever instance settled them; grouped by the primary key, so both engines
 * accept the other columns.
 */
const WITH_CHARGES = `select h.session, h.account_id, h.held_micro, h.max_tokens, h.created_at, coalesce(h.last_used,
  h.created_at) as last_used,
    coalesce(sum(r.charged), 0) as charged, coalesce(max(r.created_at), 0) as settled_at
  from credit_holds h left join receipts r on r.session = h.session and r.account_id = h.account_id`

/**
 * Micro-credits set aside for sessions in flight, kept in the store every tracker instance shares: a
 * hold is checked against the account's balance and its other holds and taken in one transaction
 * (serializable on PostgreSQL), so two instances cannot both hold the same credits. What a hold has
 * left is its amount less its session's settled charges, read from the ledger; a hold idle for
 * HOLD_IDLE_MS is released by whichever instance next looks at it.
 */
export class CreditHolds {
  constructor(private readonly db: Sql) {}

  /**
   * The session's hold. On a re-plan (here or on another instance) the stored one, `taken` false,
   * touched when it is `accountId`'s; else a new one sized by `size` from the credits the account has
   * free (it throws to refuse).
   */
  take(
    session: string,
    accountId: string,
    size: SizeHold,
    now = Date.now(),
    maxLive?: number,
  ): Promise<{ hold: StoredHold; taken: boolean }> {
    return this.db.transaction(async (tx) => {
      const known = await tx.get<HoldRow>(`${WITH_CHARGES} where h.session = ? group by h.session`, [session])
      if (known !== undefined && !idle(known, now)) {
        if (known.account_id === accountId)
          await tx.run('update credit_holds set last_used = ? where session = ?', [now, session])
        return { hold: fromRow(known), taken: false }
      }
      let held = 0
      let live = 0
      for (const h of await tx.all<HoldRow>(`${WITH_CHARGES} where h.account_id = ? group by h.session`, [accountId])) {
        if (idle(h, now)) continue
        held += left(h)
        live++
      }
      if (maxLive !== undefined && live >= maxLive)
        throw new NeuronError(
          'too_many_plans',
          `account ${accountId} has ${live} sessions routed and not ended, the most one account may; end one ` +
            `(session.end) before planning another.`,
          { maxPlans: maxLive },
        )
      const balance =
        (
          await tx.get<{ amount: number }>('select amount from ledger_balances where account = ?', [
            consumerAccount(accountId),
          ])
        )?.amount ?? 0
      const { heldMicro, maxTokens } = size(balance - held)
      const hold = { session, accountId, heldMicro, maxTokens, createdAt: now }
      // A stale hold of the same session id (idle past its expiry) is replaced.
      await tx.run(
        `insert into credit_holds (session, account_id, held_micro, max_tokens, created_at, last_used) values (?, ?,
          ?, ?, ?, ?)
         on conflict (session) do update set account_id = excluded.account_id, held_micro = excluded.held_micro,
           max_tokens = excluded.max_tokens,
           created_at = excluded.created_at, last_used = excluded.last_used`,
        [session, accountId, heldMicro, maxTokens, now, now],
      )
      return { hold, taken: true }
    })
  }

  async get(session: string): Promise<StoredHold | undefined> {
    const row = await this.db.get<HoldRow>(`${WITH_CHARGES} where h.session = ? group by h.session`, [session])
    return row === undefined ? undefined : fromRow(row)
  }

  /** The session is over: what is left of its hold is free again. */
  async release(session: string): Promise<void> {
    await this.db.run('delete from credit_holds where session = ?', [session])
  }

  /** What the account's live holds have left, on every instance. */
  async heldMicro(accountId: string, now = Date.now()): Promise<number> {
    const rows = await this.db.all<HoldRow>(`${WITH_CHARGES} where h.account_id = ? group by h.session`, [accountId])
    return rows.reduce((sum, h) => sum + (idle(h, now) ? 0 : left(h)), 0)
  }

  /** Holds idle past HOLD_IDLE_MS, with when each was last asked for or charged (their rent runs to then). */
  async idle(now = Date.now()): Promise<{ hold: StoredHold; lastActive: number }[]> {
    const rows = await this.db.all<HoldRow>(`${WITH_CHARGES} group by h.session`, [])
    return rows
      .filter((h) => idle(h, now))
      .map((h) => ({ hold: fromRow(h), lastActive: Math.max(h.last_used, h.settled_at) }))
  }

  /** Releases every hold idle past HOLD_IDLE_MS, whichever instance took it; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    const cutoff = now - HOLD_IDLE_MS
    return this.db.run(
      `delete from credit_holds where session in (select h.session from credit_holds h left join receipts r on
        r.session = h.session and r.account_id = h.account_id
         group by h.session having coalesce(h.last_used, h.created_at) < ? and coalesce(max(r.created_at), 0) < ?)`,
      [cutoff, cutoff],
    )
  }
}

/** The migration that makes holds the instances' shared reservation (appended to the store's list). */
export const SHARED_HOLDS_SCHEMA = `alter table credit_holds add column last_used integer;
   create index credit_holds_account on credit_holds(account_id);
   create index receipts_session on receipts(session);`

interface HoldRow {
  session: string
  account_id: string
  held_micro: number
  max_tokens: number
  created_at: number
  last_used: number
  charged: number
  settled_at: number
}

/** Neither asked for again nor charged for HOLD_IDLE_MS. */
function idle(h: HoldRow, now: number): boolean {
  return now - Math.max(h.last_used, h.settled_at) > HOLD_IDLE_MS
}

function left(h: HoldRow): number {
  return Math.max(0, h.held_micro - h.charged)
}

function fromRow(h: HoldRow): StoredHold {
  return {
    session: h.session,
    accountId: h.account_id,
    heldMicro: h.held_micro,
    maxTokens: h.max_tokens,
    createdAt: h.created_at,
  }
}
