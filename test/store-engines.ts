// The tracker's store suites run once per engine: SQLite (always) and PostgreSQL (a throwaway cluster,
// skipped with the reason in the suite's name where it is not installed; CI installs it).
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { PostgresStore } from '../tracker/db/postgres-store'
import { SqliteTrackerStore, type TrackerStore } from '../tracker/db/store'
import { scratchDir } from './models'
import { type PostgresCluster, postgresMissing, startPostgres } from './postgres'

export interface StoreEngine {
  /** 'SQLite', 'PostgreSQL', or 'PostgreSQL (skipped: why)'. */
  readonly name: string
  /** Why this engine's suite is skipped here (undefined: it runs). */
  readonly skip: string | undefined
  /**
   * Starts what the engine needs for the suite (call inside its describe): a scratch directory or a
   * cluster, stopped after the suite.
   */
  setUp(): void
  /** A new, empty database, and how to open it again (as a restarted tracker, or a second instance, would). */
  fresh(): Promise<{ readonly location: string; open(): Promise<TrackerStore> }>
  /** Runs one write behind the tracker's back (`?` placeholders), as an older tracker or an operator would have. */
  exec(location: string, sql: string, params: readonly (string | number | null)[]): Promise<void>
}

function sqlite(): StoreEngine {
  let scratch: Awaited<ReturnType<typeof scratchDir>> | undefined
  let n = 0
  return {
    name: 'SQLite',
    skip: undefined,
    setUp() {
      beforeAll(async () => {
        scratch = await scratchDir('neuron-store-')
      })
      afterAll(async () => scratch?.cleanup())
    },
    async fresh() {
      if (scratch === undefined) throw new Error('call engine.setUp() in the suite first')
      const location = join(scratch.dir, `tracker-${++n}.sqlite`)
      return { location, open: async () => new SqliteTrackerStore(location) }
    },
    async exec(location, sql, params) {
      const db = new Database(location)
      try {
        db.prepare(sql).run(...params)
      } finally {
        db.close()
      }
    },
  }
}

function postgres(missing: string | undefined): StoreEngine {
  let cluster: PostgresCluster | undefined
  return {
    name: missing === undefined ? 'PostgreSQL' : `PostgreSQL (skipped: ${missing})`,
    skip: missing,
    setUp() {
      beforeAll(async () => {
        if (missing === undefined) cluster = await startPostgres()
      })
      afterAll(async () => cluster?.stop())
    },
    async fresh() {
      if (cluster === undefined) throw new Error('call engine.setUp() in the suite first')
      const location = await cluster.createDatabase()
      return { location, open: () => PostgresStore.open(location, { poolSize: 4 }) }
    },
    async exec(location, sql, params) {
      const client = new pg.Client({ connectionString: location })
      client.on('error', () => {}) // a lost connection fails the query below instead
      await client.connect()
      try {
        let n = 0
        await client.query(
          sql.replace(/\?/g, () => `$${++n}`),
          [...params],
        )
      } finally {
        await client.end()
      }
    },
  }
}

/** Both engines, for `describe.each(await storeEngines())('… on $name', …)` with `describe.skipIf(engine.skip)`. */
export async function storeEngines(): Promise<StoreEngine[]> {
  return [sqlite(), postgres(await postgresMissing())]
}
