import type Database from 'better-sqlite3'
import type { Receipt } from '../../protocol'
import { EscrowedReceipts, type EscrowState } from './escrowed-receipts'
import { RoutedSessions } from './routed-sessions'

export interface StoredAccount {
  readonly accountId: string
  readonly name: string
  /** Set when the account is an app's key pair (base64url ed25519). */
  readonly publicKey: string | null
  readonly createdAt: number
}

/** One leg of a transaction: `account` is `consumer:<id>`, `host:<id>`, `escrow:<id>`, `swarm:fee` or `swarm:grants`. */
export interface Entry {
  readonly account: string
  /** Micro-credits; a debit is negative. */
  readonly amount: number
}

export interface Transaction {
  /**
   * forfeit: a failed host's earnings move to the host that replayed its work; release: pending earnings
   * leave a host's escrow for its settled account; void: a host's pending earnings go back to its payers.
   */
  readonly kind: 'grant' | 'charge' | 'forfeit' | 'release' | 'void'
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
    /** What the consumer paid for it and the fee out of that: a void refunds exactly these. */
    readonly charged?: number
    readonly fee?: number
    /** 'pending' while the earnings wait in the host's escrow (default 'released': paid to its settled account). */
    readonly escrow?: EscrowState
    /** On a replay: the failed host whose earnings paid for it. */
    readonly forfeitFrom?: string
  }
  readonly at: number
}

export type PostResult = { readonly posted: true; readonly txnId: number } | { readonly posted: false; readonly reason: 'duplicate' | 'insufficient' }

export interface StoredReceipt {
  readonly receipt: Receipt
  readonly modelId: string
  readonly accountId: string | null
  readonly hostEarned: number
  readonly escrow: EscrowState
  readonly createdAt: number
}

export interface Rejection {
  readonly hostId: string
  readonly session: string | null
  readonly step: number | null
  readonly code: string
  readonly message: string
  readonly createdAt: number
}

export interface EarningsBucket {
  /** Start of the bucket, ms since epoch (hour or day, UTC). */
  readonly start: number
  readonly modelId: string
  readonly earned: number
  readonly blockTokens: number
  readonly receipts: number
}

/** The ledger's durable side; callers see no SQL. Every transaction's entries sum to zero. */
export interface LedgerStore {
  /** The routes issued and the credits held for them. */
  readonly routes: RoutedSessions
  /** Hosts' pending earnings, receipt by receipt (Escrow moves the credits). */
  readonly escrow: EscrowedReceipts
  createAccount(account: StoredAccount, keyHash: string | null): void
  addApiKey(accountId: string, keyHash: string, at: number): void
  accountByKeyHash(keyHash: string): StoredAccount | undefined
  accountByPublicKey(publicKey: string): StoredAccount | undefined
  getAccount(accountId: string): StoredAccount | undefined
  post(txn: Transaction): PostResult
  /** Runs `fn` in one SQLite transaction: its posts commit together (one write instead of one per post). */
  atomically<T>(fn: () => T): T
  balance(account: string): number
  /** Σ of every entry ever posted: zero while the ledger is sound. */
  total(): number
  /** Accounts whose running balance differs from the sum of their entries (none while the ledger is sound). */
  driftedBalances(): string[]
  /** Transactions whose entries do not sum to zero (none while the ledger is sound). */
  unbalancedTransactions(): number[]
  entryCount(): number
  hasReceipt(idempotencyKey: string): boolean
  /** The input and output hashes of the settled receipt with this key (for the seam check between hops). */
  receiptHashes(idempotencyKey: string): { input: string; output: string } | undefined
  receipts(filter: { hostId?: string; session?: string; limit?: number }): StoredReceipt[]
  earnings(hostId: string, bucket: 'hour' | 'day', since: number): EarningsBucket[]
  servedBlockTokens(hostId: string): number
  reject(rejection: Rejection): void
  rejections(hostId: string, limit?: number): Rejection[]
  recordReputation(hostId: string, at: number, score: number, components: Record<string, number>): void
  reputationHistory(hostId: string, limit?: number): { at: number; score: number; components: Record<string, number> }[]
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

export class SqliteLedgerStore implements LedgerStore {
  readonly routes: RoutedSessions
  readonly escrow: EscrowedReceipts
  private readonly postTxn: (txn: Transaction) => PostResult
  /** Prepared once: every paid receipt reads its payer's balance (the overdraft check). */
  private readonly balanceOf: Database.Statement<[string], { amount: number }>

  constructor(private readonly db: Database.Database) {
    this.routes = new RoutedSessions(db)
    this.escrow = new EscrowedReceipts(db)
    this.balanceOf = db.prepare('select amount from ledger_balances where account = ?')
    const insertTxn = db.prepare('insert into ledger_transactions (kind, idempotency_key, model_id, created_at) values (?, ?, ?, ?)')
    const insertEntry = db.prepare('insert into ledger_entries (txn_id, account, amount, created_at) values (?, ?, ?, ?)')
    const insertReceipt = db.prepare(
      `insert into receipts (idempotency_key, session, step, host_id, block_begin, block_end, tokens, model_id, account_id, txn_id, host_earned, body, created_at,
         escrow, charged, fee, forfeit_from)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    const exists = db.prepare('select 1 from ledger_transactions where idempotency_key = ?')
    const addBalance = db.prepare(
      'insert into ledger_balances (account, amount) values (?, ?) on conflict(account) do update set amount = amount + excluded.amount',
    )
    // One SQLite transaction: the idempotency check, the overdraft check and every leg commit together or not at all.
    this.postTxn = db.transaction((txn: Transaction): PostResult => {
      const sum = txn.entries.reduce((s, e) => s + e.amount, 0)
      if (sum !== 0 || txn.entries.some((e) => !Number.isSafeInteger(e.amount))) {
        throw new Error(`a ledger transaction's entries must be integers summing to zero; these sum to ${sum}`)
      }
      if (txn.idempotencyKey !== null && exists.get(txn.idempotencyKey) !== undefined) return { posted: false, reason: 'duplicate' }
      if (txn.noOverdraft !== undefined) {
        const change = txn.entries.filter((e) => e.account === txn.noOverdraft).reduce((s, e) => s + e.amount, 0)
        if (this.balance(txn.noOverdraft) + change < 0) return { posted: false, reason: 'insufficient' }
      }
      const txnId = Number(insertTxn.run(txn.kind, txn.idempotencyKey, txn.modelId, txn.at).lastInsertRowid)
      for (const e of txn.entries) {
        if (e.amount === 0) continue
        insertEntry.run(txnId, e.account, e.amount, txn.at)
        addBalance.run(e.account, e.amount)
      }
      const r = txn.receipt
      if (r !== undefined && txn.idempotencyKey !== null) {
        const b = r.body
        insertReceipt.run(
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
        )
      }
      return { posted: true, txnId }
    })
  }

  createAccount(a: StoredAccount, keyHash: string | null): void {
    this.db.transaction(() => {
      this.db.prepare('insert into accounts (account_id, name, public_key, created_at) values (?, ?, ?, ?)').run(a.accountId, a.name, a.publicKey, a.createdAt)
      if (keyHash !== null) this.addApiKey(a.accountId, keyHash, a.createdAt)
    })()
  }

  addApiKey(accountId: string, keyHash: string, at: number): void {
    this.db.prepare('insert into api_keys (key_hash, account_id, created_at) values (?, ?, ?)').run(keyHash, accountId, at)
  }

  accountByKeyHash(keyHash: string): StoredAccount | undefined {
    const row = this.db.prepare('select a.* from api_keys k join accounts a using (account_id) where k.key_hash = ?').get(keyHash) as AccountRow | undefined
    return row === undefined ? undefined : accountFromRow(row)
  }

  accountByPublicKey(publicKey: string): StoredAccount | undefined {
    const row = this.db.prepare('select * from accounts where public_key = ?').get(publicKey) as AccountRow | undefined
    return row === undefined ? undefined : accountFromRow(row)
  }

  getAccount(accountId: string): StoredAccount | undefined {
    const row = this.db.prepare('select * from accounts where account_id = ?').get(accountId) as AccountRow | undefined
    return row === undefined ? undefined : accountFromRow(row)
  }

  post(txn: Transaction): PostResult {
    return this.postTxn(txn)
  }

  atomically<T>(fn: () => T): T {
    return this.db.transaction(fn)()
  }

  balance(account: string): number {
    return this.balanceOf.get(account)?.amount ?? 0
  }

  driftedBalances(): string[] {
    const rows = this.db
      .prepare(
        `select coalesce(e.account, b.account) as account from
           (select account, sum(amount) as total from ledger_entries group by account) e
           full outer join ledger_balances b on b.account = e.account
         where coalesce(e.total, 0) != coalesce(b.amount, 0)`,
      )
      .all() as { account: string }[]
    return rows.map((r) => r.account)
  }

  total(): number {
    return (this.db.prepare('select coalesce(sum(amount), 0) as t from ledger_entries').get() as { t: number }).t
  }

  unbalancedTransactions(): number[] {
    return (this.db.prepare('select txn_id from ledger_entries group by txn_id having sum(amount) != 0').all() as { txn_id: number }[]).map((r) => r.txn_id)
  }

  entryCount(): number {
    return (this.db.prepare('select count(*) as n from ledger_entries').get() as { n: number }).n
  }

  receiptHashes(idempotencyKey: string): { input: string; output: string } | undefined {
    return this.db
      .prepare(`select json_extract(body, '$.input') as input, json_extract(body, '$.output') as output from receipts where idempotency_key = ?`)
      .get(idempotencyKey) as { input: string; output: string } | undefined
  }

  hasReceipt(idempotencyKey: string): boolean {
    return this.db.prepare('select 1 from receipts where idempotency_key = ?').get(idempotencyKey) !== undefined
  }

  receipts(filter: { hostId?: string; session?: string; limit?: number }): StoredReceipt[] {
    const where: string[] = []
    const args: (string | number)[] = []
    if (filter.hostId !== undefined) {
      where.push('host_id = ?')
      args.push(filter.hostId)
    }
    if (filter.session !== undefined) {
      where.push('session = ?')
      args.push(filter.session)
    }
    const sql = `select * from receipts ${where.length > 0 ? `where ${where.join(' and ')}` : ''} order by created_at desc, step desc limit ?`
    const rows = this.db.prepare(sql).all(...args, filter.limit ?? 100) as ReceiptRow[]
    return rows.map((r) => ({
      receipt: JSON.parse(r.body),
      modelId: r.model_id,
      accountId: r.account_id,
      hostEarned: r.host_earned,
      escrow: r.escrow,
      createdAt: r.created_at,
    }))
  }

  earnings(hostId: string, bucket: 'hour' | 'day', since: number): EarningsBucket[] {
    const size = bucket === 'hour' ? HOUR : DAY
    const rows = this.db
      .prepare(
        `select created_at - (created_at % ?) as start, model_id, sum(host_earned) as earned, sum((block_end - block_begin) * tokens) as block_tokens, count(*) as n
         from receipts where host_id = ? and created_at >= ? and escrow != 'voided' group by start, model_id order by start, model_id`,
      )
      .all(size, hostId, since) as { start: number; model_id: string; earned: number; block_tokens: number; n: number }[]
    return rows.map((r) => ({ start: r.start, modelId: r.model_id, earned: r.earned, blockTokens: r.block_tokens, receipts: r.n }))
  }

  servedBlockTokens(hostId: string): number {
    return (
      this.db.prepare('select coalesce(sum((block_end - block_begin) * tokens), 0) as n from receipts where host_id = ?').get(hostId) as {
        n: number
      }
    ).n
  }

  reject(r: Rejection): void {
    this.db
      .prepare('insert into receipt_rejections (host_id, session, step, code, message, created_at) values (?, ?, ?, ?, ?, ?)')
      .run(r.hostId, r.session, r.step, r.code, r.message, r.createdAt)
  }

  rejections(hostId: string, limit = 100): Rejection[] {
    const rows = this.db.prepare('select * from receipt_rejections where host_id = ? order by rejection_id desc limit ?').all(hostId, limit) as {
      host_id: string
      session: string | null
      step: number | null
      code: string
      message: string
      created_at: number
    }[]
    return rows.map((r) => ({ hostId: r.host_id, session: r.session, step: r.step, code: r.code, message: r.message, createdAt: r.created_at }))
  }

  recordReputation(hostId: string, at: number, score: number, components: Record<string, number>): void {
    this.db.prepare('insert into reputation_history (host_id, at, score, components) values (?, ?, ?, ?)').run(hostId, at, score, JSON.stringify(components))
  }

  reputationHistory(hostId: string, limit = 100): { at: number; score: number; components: Record<string, number> }[] {
    const rows = this.db.prepare('select * from reputation_history where host_id = ? order by at desc limit ?').all(hostId, limit) as {
      at: number
      score: number
      components: string
    }[]
    return rows.map((r) => ({ at: r.at, score: r.score, components: JSON.parse(r.components) }))
  }
}

interface AccountRow {
  account_id: string
  name: string
  public_key: string | null
  created_at: number
}

interface ReceiptRow {
  body: string
  model_id: string
  account_id: string | null
  host_earned: number
  escrow: EscrowState
  created_at: number
}

function accountFromRow(r: AccountRow): StoredAccount {
  return { accountId: r.account_id, name: r.name, publicKey: r.public_key, createdAt: r.created_at }
}
