import Database from 'better-sqlite3'
import type { Sql, SqlValue } from './sql'

/**
 * better-sqlite3 behind the async `Sql` seam. A transaction holds the one connection across awaits: other
 * callers wait at its gate until it commits, so they neither see its writes early nor join its rollback.
 */
export class SqliteSql implements Sql {
  readonly dialect = 'sqlite'
  readonly db: Database.Database
  private readonly statements = new Map<string, Database.Statement>()
  /** Settles when the open transaction ends (undefined: none open). */
  private gate: Promise<void> | undefined
  private readonly inside: Sql

  constructor(path: string) {
    this.db = new Database(path)
    this.db.pragma('journal_mode = WAL')
    // FULL: each commit is fsynced before it returns, so a power cut cannot take back a settled credit
    // (NORMAL in WAL mode may lose the last commits).
    this.db.pragma('synchronous = FULL')
    // The view a transaction's callback gets: it passes the gate its own transaction holds.
    this.inside = {
      dialect: 'sqlite',
      all: async <T>(sql: string, params: readonly SqlValue[] = []) => this.prepared(sql).all(...params) as T[],
      get: async <T>(sql: string, params: readonly SqlValue[] = []) =>
        this.prepared(sql).get(...params) as T | undefined,
      run: async (sql: string, params: readonly SqlValue[] = []) => this.prepared(sql).run(...params).changes,
      transaction: <T>(fn: (tx: Sql) => Promise<T>) => fn(this.inside),
      close: () => this.close(),
    }
  }

  // Each call checks the gate and runs its statement in one
  // synchronous stretch: no transaction can open between the two.
  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    while (this.gate !== undefined) await this.gate
    return this.prepared(sql).all(...params) as T[]
  }

  async get<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    while (this.gate !== undefined) await this.gate
    return this.prepared(sql).get(...params) as T | undefined
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    while (this.gate !== undefined) await this.gate
    return this.prepared(sql).run(...params).changes
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    while (this.gate !== undefined) await this.gate
    let open!: () => void
    this.gate = new Promise<void>((resolve) => {
      open = resolve
    })
    try {
      // inside the try: a begin that fails (SQLITE_BUSY past the busy timeout) must still open the gate
      this.db.exec('begin immediate')
      const result = await fn(this.inside)
      this.db.exec('commit')
      return result
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('rollback')
      throw error
    } finally {
      this.gate = undefined
      open()
    }
  }

  async close(): Promise<void> {
    while (this.gate !== undefined) await this.gate
    this.db.close()
  }

  private prepared(sql: string): Database.Statement {
    let statement = this.statements.get(sql)
    if (statement === undefined) {
      statement = this.db.prepare(sql)
      this.statements.set(sql, statement)
    }
    return statement
  }
}
