import { migratePostgres } from './migrations'
import { PostgresSql } from './postgres-sql'
import { StoreError } from './sql'
import { SqliteTrackerStore, SqlTrackerStore, type TrackerStore } from './store'

/**
 * The tracker's store on PostgreSQL: the same queries and migrations as SQLite's, on a node-postgres pool.
 * The ledger's postings run in serializable transactions, retried when two of them race, so writers on
 * several processes lose and double nothing. Credit holds are taken in the database too (ledger/credit-holds.ts), so
 * instances sharing it (joined by Redis, tracker/cluster/) cannot hold the same credits twice.
 */
export class PostgresStore extends SqlTrackerStore {
  private constructor(readonly postgres: PostgresSql) {
    super(postgres)
  }

  /** Connects and applies the migrations the database lacks. */
  static async open(url: string, options: { readonly poolSize?: number } = {}): Promise<PostgresStore> {
    const postgres = new PostgresSql(url, options.poolSize === undefined ? {} : { max: options.poolSize })
    try {
      await migratePostgres(postgres.pool)
    } catch (cause) {
      await postgres.close().catch(() => {})
      throw new StoreError(
        `cannot open the tracker's database at ${redacted(url)}: ` +
          `${cause instanceof Error ? cause.message : cause}; check the URL, that the server is up and that the ` +
          `role may create tables.`,
        { cause },
      )
    }
    return new PostgresStore(postgres)
  }
}

/** Whether `db` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//.test(db)
}

/** `--db`: a postgres:// URL opens PostgreSQL; anything else is a SQLite file path (':memory:' included). */
export async function openTrackerStore(db: string): Promise<TrackerStore> {
  return isPostgresUrl(db) ? PostgresStore.open(db) : new SqliteTrackerStore(db)
}

/** The URL without its password, for messages and logs. */
export function redacted(url: string): string {
  try {
    const u = new URL(url)
    if (u.password !== '') u.password = '***'
    return u.toString()
  } catch {
    return 'the given URL'
  }
}
