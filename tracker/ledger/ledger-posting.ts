import type { Receipt } from '../../protocol'
import type { Sql } from '../db/sql'
import type { EscrowState } from './escrowed-receipts'

/**
 * One leg of a transaction: `account` is `consumer:<id>`, `host:<id>`, `escrow:<id>`, `swarm:fee` or `swarm:grants`.
 */
export interface Entry {
  readonly account: string
  /** Micro-credits; a debit is negative. */
  readonly amount: number
}

export interface Transaction {
  /**
   * forfeit: a failed host's earnings move to the host that replayed its work; release: pending earnings
   * leave a host's escrow for its settled account; void: a host's pending earnings go back to its payers; rent: a
   * session's hosts are paid for the minutes it held their cache (tracker/ledger/rent.ts).
   */
  readonly kind: 'grant' | 'charge' | 'forfeit' | 'release' | 'void' | 'rent'
  /** Unique: a transaction posted twice with the same key is refused (null: always posts). */
  readonly idempotencyKey: string | null
  readonly modelId: string | null
  readonly entries: readonly Entry[]
  /** This account's balance may not go below zero after the transaction. */
  readonly noOverdraft?: string
  /** The verified receipt the transaction pays for, stored with it. */
  readonly receipt?: {
    readonly body: Receipt
    readonly modelId: string
    readonly accountId: string | null
    readonly hostEarned: number
    /**
     * What the consumer paid for it, and what of that a void takes back from the swarm's fee account (the fee, and the
     * twins' standby shares: standby.ts): a void refunds exactly the charge.
     */
    readonly charged?: number
    readonly fee?: number
    /** 'pending' while the earnings wait in the host's escrow (default 'released': paid to its settled account). */
    readonly escrow?: EscrowState
    /** On a replay: the failed host whose earnings paid for it. */
    readonly forfeitFrom?: string
  }
  readonly at: number
}

export type PostResult =
  | { readonly posted: true; readonly txnId: number }
  | { readonly posted: false; readonly reason: 'duplicate' | 'insufficient' }

const INSERT_RECEIPT = `insert into receipts (idempotency_key, session, step, host_id, block_begin, block_end,
  tokens, model_id, account_id, txn_id, host_earned, body,
     created_at, escrow, charged, fee, forfeit_from)
   values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/**
 * One posting inside an open transaction: the idempotency check, the overdraft check and every leg
 * commit together or not at all. On PostgreSQL the transaction is serializable, so two trackers posting
 * the same key, or overdrawing one account, cannot both pass their checks: one is run again and sees the other.
 */
export async function postIn(tx: Sql, txn: Transaction): Promise<PostResult> {
  if (
    txn.idempotencyKey !== null &&
    (await tx.get('select 1 as one from ledger_transactions where idempotency_key = ?', [txn.idempotencyKey])) !==
      undefined
  )
    return { posted: false, reason: 'duplicate' }
  if (txn.noOverdraft !== undefined) {
    const change = txn.entries.filter((e) => e.account === txn.noOverdraft).reduce((s, e) => s + e.amount, 0)
    const row = await tx.get<{ amount: number }>('select amount from ledger_balances where account = ?', [
      txn.noOverdraft,
    ])
    if ((row?.amount ?? 0) + change < 0) return { posted: false, reason: 'insufficient' }
  }
  const inserted = await tx.get<{ txn_id: number }>(
    'insert into ledger_transactions (kind, idempotency_key, model_id, created_at) values (?, ?, ?, ?) on conflict ' +
      'do nothing returning txn_id',
    [txn.kind, txn.idempotencyKey, txn.modelId, txn.at],
  )
  if (inserted === undefined) return { posted: false, reason: 'duplicate' }
  const txnId = inserted.txn_id
  for (const e of txn.entries) {
    if (e.amount === 0) continue
    await tx.run('insert into ledger_entries (txn_id, account, amount, created_at) values (?, ?, ?, ?)', [
      txnId,
      e.account,
      e.amount,
      txn.at,
    ])
    await tx.run(
      'insert into ledger_balances (account, amount) values (?, ?) on conflict (account) do update set amount = ' +
        'ledger_balances.amount + excluded.amount',
      [e.account, e.amount],
    )
  }
  const r = txn.receipt
  if (r !== undefined && txn.idempotencyKey !== null) {
    const b = r.body
    await tx.run(INSERT_RECEIPT, [
      txn.idempotencyKey,
      b.session,
      b.step,
      b.hostId,
      b.blocks[0],
      b.blocks[1],
      b.tokens,
      r.modelId,
      r.accountId,
      txnId,
      r.hostEarned,
      JSON.stringify(b),
      txn.at,
      r.escrow ?? 'released',
      r.charged ?? 0,
      r.fee ?? 0,
      r.forfeitFrom ?? null,
    ])
  }
  return { posted: true, txnId }
}
