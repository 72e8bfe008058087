import pg from 'pg'
import { type Sql, type SqlValue, StoreError } from './sql'

/**
 * int8 (count, bigint columns) and numeric (sums of bigints) as JS
 * numbers: every amount is a safe integer of micro-credits or ms.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format)
  }) as pg.CustomTypesConfig['getTypeParser'],
}

/** Serialization failure and deadlock: the transaction lost a race with another writer and is safe to run again. */
const RETRYABLE = new Set(['40001', '40P01'])
/**
 * Attempts before a transaction's serialization failure is given up on:
 * writers racing on one hot balance (the fee account) collide often.
 */
const MAX_ATTEMPTS = 100
/** The session advisory lock retried transactions take (any fixed number, distinct from the migration lock). */
const RETRY_LOCK = 0x6e6576

/** `?` placeholders as PostgreSQL's `$1, $2, …` (no store query has a `?` inside a string literal). */
function numbered(sql: string): string {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient

class PostgresQueries implements Sql {
  readonly dialect = 'postgres'
  private readonly texts = new Map<string, string>()

  constructor(
    protected readonly target: Queryable,
    private readonly outer: PostgresSql | undefined,
  ) {}

  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[]
  }

  async get<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return (await this.query(sql, params)).rowCount ?? 0
  }

  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    // Inside a transaction: nested calls join it.
    return this.outer === undefined ? fn(this) : this.outer.transaction(fn)
  }

  async close(): Promise<void> {}

  private query(sql: string, params: readonly SqlValue[]) {
    let text = this.texts.get(sql)
    if (text === undefined) {
      text = numbered(sql)
      this.texts.set(sql, text)
    }
    return this.target.query({ text, values: params as SqlValue[], types: TYPES })
  }
}

/**
 * A node-postgres pool behind the `Sql` seam. Each transaction runs SERIALIZABLE on one pooled
 * connection and is run again when it loses a race with another writer (SQLSTATE 40001 or 40P01),
 * so concurrent trackers on one database neither lose nor double a posting. A retry first takes a
 * session advisory lock, so retrying writers of every tracker go one at a time: writers racing on
 * one hot balance (the fee account) would otherwise keep colliding.
 */
export class PostgresSql extends PostgresQueries {
  readonly pool: pg.Pool
  /** Transactions run again after a serialization failure, since this pool opened (for the benchmarks and tests). */
  retries = 0

  constructor(url: string, options: { readonly max?: number } = {}) {
    const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 })
    super(pool, undefined)
    this.pool = pool
    // An idle client's error (the server restarted) must not crash the tracker: the pool replaces it.
    pool.on('error', () => {})
  }

  override async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient
      try {
        client = await this.pool.connect()
      } catch (cause) {
        throw new StoreError(
          `cannot reach PostgreSQL (${cause instanceof Error ? cause.message : cause}); check --db and that the ` +
            `server is up.`,
          { cause },
        )
      }
      const tx = new PostgresQueries(client, undefined)
      let broken: Error | undefined
      // A connection lost while checked out (the server restarted) is told here, not as an unhandled 'error' that ends
      // the process; the attempt's next query fails, and the connection is not reused.
      const lost = (e: Error) => {
        broken = e
      }
      client.on('error', lost)
      // After a lost race, the attempt queues behind every other
      // retrying writer (any tracker's) instead of racing again.
      const queued = attempt > 1
      try {
        if (queued) await client.query('select pg_advisory_lock($1)', [RETRY_LOCK])
        await client.query('begin isolation level serializable')
        const result = await fn(tx)
        await client.query('commit')
        return result
      } catch (error) {
        await client.query('rollback').catch((e: Error) => {
          broken = e
        })
        const code = (error as { code?: unknown }).code
        if (typeof code === 'string' && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS) {
          this.retries++
          // A random, growing wait: two writers that collided should not collide again at once.
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** Math.min(attempt, 6))))
          continue
        }
        throw error
      } finally {
        if (queued)
          await client.query('select pg_advisory_unlock($1)', [RETRY_LOCK]).catch((e: Error) => {
            broken = e
          })
        // A connection whose rollback or unlock failed is closed, never reused (it may still hold the lock).
        client.off('error', lost)
        client.release(broken)
      }
    }
  }

  override async close(): Promise<void> {
    await this.pool.end()
  }
}
