/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | bigint | Buffer | null

/**
 * The one seam between the tracker's stores and a database engine: `?` placeholders, rows as plain
 * objects, numbers as JS numbers. The stores are written once over it; SQLite and PostgreSQL differ below.
 */
export interface Sql {
  readonly dialect: 'sqlite' | 'postgres'
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>
  /** Runs a write; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>
  /**
   * Runs `fn` in one transaction (serializable on PostgreSQL, retried there on a serialization failure, so
   * `fn` may run more than once: it must only read and write through `tx`). Nested calls join the outer one.
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** A store's query failed in a way a retry cannot fix, e.g. the database is unreachable. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StoreError'
  }
}
