import type { Receipt } from '../../protocol'
import type { Sql } from '../db/sql'
import { EscrowedReceipts, type EscrowState } from './escrowed-receipts'
import { type PostResult, postIn, type Transaction } from './ledger-posting'
import { RoutedSessions } from './routed-sessions'

export interface StoredAccount {
  readonly accountId: string
  readonly name: string
  /** Set when the account is an app's key pair (base64url ed25519). */
  readonly publicKey: string | null
  readonly createdAt: number
}

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
  /** The routes issued (their credit holds: TrackerStore.holds). */
  readonly routes: RoutedSessions
  /** Hosts' pending earnings, receipt by receipt (Escrow moves the credits). */
  readonly escrow: EscrowedReceipts
  /** Adds an account (its API keys are kept apart: ApiKeys). */
  createAccount(account: StoredAccount): Promise<void>
  accountByPublicKey(publicKey: string): Promise<StoredAccount | undefined>
  getAccount(accountId: string): Promise<StoredAccount | undefined>
  /**
   * Posts in its own transaction, or in the one `atomically` opened when called on the store it hands over. Only the
   * Ledger (ledger.ts) posts: it names each kind of write.
   */
  post(txn: Transaction): Promise<PostResult>
  /**
   * Runs `fn` in one database transaction with a store bound to it: its posts commit together (one write
   * instead of one per post). On PostgreSQL `fn` may run again after a serialization failure, so it
   * reads and writes only through `tx` and keeps no effect of a failed attempt.
   */
  atomically<T>(fn: (tx: LedgerStore) => Promise<T>): Promise<T>
  balance(account: string): Promise<number>
  /** Σ of every entry ever posted: zero while the ledger is sound. */
  total(): Promise<number>
  /** Accounts whose running balance differs from the sum of their entries (none while the ledger is sound). */
  driftedBalances(): Promise<string[]>
  /** Transactions whose entries do not sum to zero (none while the ledger is sound). */
  unbalancedTransactions(): Promise<number[]>
  entryCount(): Promise<number>
  hasReceipt(idempotencyKey: string): Promise<boolean>
  /** The input and output hashes of the settled receipt with this key (for the seam check between hops). */
  receiptHashes(idempotencyKey: string): Promise<{ input: string; output: string } | undefined>
  receipts(filter: { hostId?: string; session?: string; limit?: number }): Promise<StoredReceipt[]>
  earnings(hostId: string, bucket: 'hour' | 'day', since: number): Promise<EarningsBucket[]>
  servedBlockTokens(hostId: string): Promise<number>
  reject(rejection: Rejection): Promise<void>
  rejections(hostId: string, limit?: number): Promise<Rejection[]>
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The ledger over either engine (tracker/db/sql.ts): one set of queries, SQLite's and PostgreSQL's common SQL. */
export class SqlLedgerStore implements LedgerStore {
  readonly routes: RoutedSessions
  readonly escrow: EscrowedReceipts

  constructor(
    private readonly db: Sql,
    /** Set on the store `atomically` hands over: posts join that transaction. */
    private readonly inTransaction = false,
  ) {
    this.routes = new RoutedSessions(db)
    this.escrow = new EscrowedReceipts(db)
  }

  async createAccount(a: StoredAccount): Promise<void> {
    await this.db.run('insert into accounts (account_id, name, public_key, created_at) values (?, ?, ?, ?)', [
      a.accountId,
      a.name,
      a.publicKey,
      a.createdAt,
    ])
  }

  async accountByPublicKey(publicKey: string): Promise<StoredAccount | undefined> {
    const row = await this.db.get<AccountRow>('select * from accounts where public_key = ?', [publicKey])
    return row === undefined ? undefined : accountFromRow(row)
  }

  async getAccount(accountId: string): Promise<StoredAccount | undefined> {
    const row = await this.db.get<AccountRow>('select * from accounts where account_id = ?', [accountId])
    return row === undefined ? undefined : accountFromRow(row)
  }

  post(txn: Transaction): Promise<PostResult> {
    const sum = txn.entries.reduce((s, e) => s + e.amount, 0)
    if (sum !== 0 || txn.entries.some((e) => !Number.isSafeInteger(e.amount))) {
      return Promise.reject(
        new Error(`a ledger transaction's entries must be integers summing to zero; these sum to ${sum}`),
      )
    }
    return this.inTransaction ? postIn(this.db, txn) : this.db.transaction((tx) => postIn(tx, txn))
  }

  atomically<T>(fn: (tx: LedgerStore) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this)
    return this.db.transaction((tx) => fn(new SqlLedgerStore(tx, true)))
  }

  async balance(account: string): Promise<number> {
    return (
      (await this.db.get<{ amount: number }>('select amount from ledger_balances where account = ?', [account]))
        ?.amount ?? 0
    )
  }

  async driftedBalances(): Promise<string[]> {
    const rows = await this.db.all<{ account: string }>(
      `select coalesce(e.account, b.account) as account from
         (select account, sum(amount) as total from ledger_entries group by account) e
         full outer join ledger_balances b on b.account = e.account
       where coalesce(e.total, 0) != coalesce(b.amount, 0)`,
    )
    return rows.map((r) => r.account)
  }

  async total(): Promise<number> {
    return Number(
      (await this.db.get<{ t: number }>('select coalesce(sum(amount), 0) as t from ledger_entries'))?.t ?? 0,
    )
  }

  async unbalancedTransactions(): Promise<number[]> {
    return (
      await this.db.all<{ txn_id: number }>('select txn_id from ledger_entries group by txn_id having sum(amount) != 0')
    ).map((r) => r.txn_id)
  }

  async entryCount(): Promise<number> {
    return (await this.db.get<{ n: number }>('select count(*) as n from ledger_entries'))?.n ?? 0
  }

  receiptHashes(idempotencyKey: string): Promise<{ input: string; output: string } | undefined> {
    const field = (name: string) =>
      this.db.dialect === 'sqlite' ? `json_extract(body, '$.${name}')` : `(body::json ->> '${name}')`
    return this.db.get(
      `select ${field('input')} as input, ${field('output')} as output from receipts where idempotency_key = ?`,
      [idempotencyKey],
    )
  }

  async hasReceipt(idempotencyKey: string): Promise<boolean> {
    return (
      (await this.db.get('select 1 as one from receipts where idempotency_key = ?', [idempotencyKey])) !== undefined
    )
  }

  async receipts(filter: { hostId?: string; session?: string; limit?: number }): Promise<StoredReceipt[]> {
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
    const sql =
      `select * from receipts ${where.length > 0 ? `where ${where.join(' and ')}` : ''} order by ` +
      `created_at desc, step desc limit ?`
    const rows = await this.db.all<ReceiptRow>(sql, [...args, filter.limit ?? 100])
    return rows.map((r) => ({
      receipt: JSON.parse(r.body),
      modelId: r.model_id,
      accountId: r.account_id,
      hostEarned: r.host_earned,
      escrow: r.escrow,
      createdAt: r.created_at,
    }))
  }

  async earnings(hostId: string, bucket: 'hour' | 'day', since: number): Promise<EarningsBucket[]> {
    const size = bucket === 'hour' ? HOUR : DAY
    const rows = await this.db.all<{
      start: number
      model_id: string
      earned: number
      block_tokens: number
      n: number
    }>(
      `select created_at - (created_at % ?) as start, model_id, sum(host_earned) as earned, sum((block_end -
        block_begin) * tokens) as block_tokens, count(*) as n
       from receipts where host_id = ? and created_at >= ? and escrow != 'voided' group by 1, model_id order by 1,
         model_id`,
      [size, hostId, since],
    )
    return rows.map((r) => ({
      start: r.start,
      modelId: r.model_id,
      earned: r.earned,
      blockTokens: r.block_tokens,
      receipts: r.n,
    }))
  }

  async servedBlockTokens(hostId: string): Promise<number> {
    const row = await this.db.get<{ n: number }>(
      'select coalesce(sum((block_end - block_begin) * tokens), 0) as n from receipts where host_id = ?',
      [hostId],
    )
    return row?.n ?? 0
  }

  async reject(r: Rejection): Promise<void> {
    await this.db.run(
      'insert into receipt_rejections (host_id, session, step, code, message, created_at) values (?, ?, ?, ?, ?, ?)',
      [r.hostId, r.session, r.step, r.code, r.message, r.createdAt],
    )
  }

  async rejections(hostId: string, limit = 100): Promise<Rejection[]> {
    const rows = await this.db.all<{
      host_id: string
      session: string | null
      step: number | null
      code: string
      message: string
      created_at: number
    }>('select * from receipt_rejections where host_id = ? order by rejection_id desc limit ?', [hostId, limit])
    return rows.map((r) => ({
      hostId: r.host_id,
      session: r.session,
      step: r.step,
      code: r.code,
      message: r.message,
      createdAt: r.created_at,
    }))
  }
}

export interface AccountRow {
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

export function accountFromRow(r: AccountRow): StoredAccount {
  return { accountId: r.account_id, name: r.name, publicKey: r.public_key, createdAt: r.created_at }
}
