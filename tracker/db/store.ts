import { decodeProbeSet, encodeProbeSet, type HardwareProfile, Manifest, type ProbeSet } from '../../protocol'
import { ChecksStore } from '../checks/checks-store'
import { ApiKeys } from '../ledger/api-keys'
import { ApiRequests } from '../ledger/api-requests'
import { CreditHolds } from '../ledger/credit-holds'
import { type LedgerStore, SqlLedgerStore, type StoredAccount } from '../ledger/ledger-store'
import { ReputationHistory } from '../reputation/reputation-history'
import { migrateSqlite } from './migrations'
import type { Sql } from './sql'
import { SqliteSql } from './sqlite-sql'

export interface StoredModel {
  readonly manifest: Manifest
  readonly torrent: Buffer
  readonly tokenizer: Buffer
  readonly infoHash: string
  /** The publisher's node id. */
  readonly publishedBy: string
  /** The publisher's public key; null for a model published before keys were recorded. */
  readonly publisherKey: string | null
  readonly publishedAt: number
}

export interface StoredHost {
  readonly hostId: string
  readonly publicKey: string
  readonly profile: HardwareProfile
  readonly firstSeen: number
  readonly lastSeen: number
}

/**
 * The tracker's durable state behind one narrow interface: SQLite embedded (SqliteTrackerStore), or
 * PostgreSQL when one machine is outgrown (db/postgres-store.ts); callers never see SQL.
 */
export interface TrackerStore {
  /** Adds a model; false when its id is taken (a published model never changes). */
  putModel(model: StoredModel): Promise<boolean>
  getModel(modelId: string): Promise<StoredModel | undefined>
  listModels(): Promise<StoredModel[]>
  upsertHost(host: StoredHost): Promise<void>
  getHost(hostId: string): Promise<StoredHost | undefined>
  /** Keeps a model's secret probe set; false when it already has one (the first set stays). */
  putProbes(probes: ProbeSet): Promise<boolean>
  getProbes(modelId: string): Promise<ProbeSet | undefined>
  /** Accounts, the ledger's transactions and balances, receipts, rejections, routes and escrow. */
  readonly ledger: LedgerStore
  /** Accounts' API keys, hashed. */
  readonly apiKeys: ApiKeys
  /** A new account and its first API key, in one transaction: never an account without its key. */
  openAccount(account: StoredAccount, apiKey: string): Promise<void>
  /** Credits set aside for sessions in flight, shared by every tracker instance on the store. */
  readonly holds: CreditHolds
  /** What the tracker's checks found of each host, and its reputation tallies. */
  readonly checks: ChecksStore
  /** The gateway's requests per account, for their owners' request logs. */
  readonly apiRequests: ApiRequests
  /** Hosts' past reputation scores. */
  readonly reputationHistory: ReputationHistory
  /** The schema version now in force (number of migrations applied). */
  schemaVersion(): Promise<number>
  close(): Promise<void>
}

/** The tracker's store over either engine (tracker/db/sql.ts): the queries are written once. */
export class SqlTrackerStore implements TrackerStore {
  readonly ledger: LedgerStore
  readonly apiKeys: ApiKeys
  readonly holds: CreditHolds
  readonly checks: ChecksStore
  readonly apiRequests: ApiRequests
  readonly reputationHistory: ReputationHistory

  constructor(protected readonly sql: Sql) {
    this.ledger = new SqlLedgerStore(sql)
    this.apiKeys = new ApiKeys(sql)
    this.holds = new CreditHolds(sql)
    this.checks = new ChecksStore(sql)
    this.apiRequests = new ApiRequests(sql)
    this.reputationHistory = new ReputationHistory(sql)
  }

  openAccount(account: StoredAccount, apiKey: string): Promise<void> {
    return this.sql.transaction(async (tx) => {
      await new SqlLedgerStore(tx, true).createAccount(account)
      await new ApiKeys(tx).add(account.accountId, apiKey, account.createdAt)
    })
  }

  async schemaVersion(): Promise<number> {
    return (await this.sql.get<{ v: number | null }>('select max(version) as v from schema_migrations'))?.v ?? 0
  }

  async putModel(m: StoredModel): Promise<boolean> {
    const changes = await this.sql.run(
      `insert into models (model_id, manifest, torrent, tokenizer, info_hash, published_by, publisher_key,
        published_at) values (?, ?, ?, ?, ?, ?, ?, ?)
       on conflict do nothing`,
      [
        m.manifest.modelId,
        JSON.stringify(m.manifest),
        m.torrent,
        m.tokenizer,
        m.infoHash,
        m.publishedBy,
        m.publisherKey,
        m.publishedAt,
      ],
    )
    return changes === 1
  }

  async getModel(modelId: string): Promise<StoredModel | undefined> {
    const row = await this.sql.get<ModelRow>('select * from models where model_id = ?', [modelId])
    return row === undefined ? undefined : modelFromRow(row)
  }

  async listModels(): Promise<StoredModel[]> {
    return (await this.sql.all<ModelRow>('select * from models order by model_id')).map(modelFromRow)
  }

  async upsertHost(h: StoredHost): Promise<void> {
    await this.sql.run(
      `insert into hosts (host_id, public_key, profile, first_seen, last_seen) values (?, ?, ?, ?, ?)
       on conflict (host_id) do update set profile = excluded.profile, last_seen = excluded.last_seen`,
      [h.hostId, h.publicKey, JSON.stringify(h.profile), h.firstSeen, h.lastSeen],
    )
  }

  async getHost(hostId: string): Promise<StoredHost | undefined> {
    const row = await this.sql.get<HostRow>('select * from hosts where host_id = ?', [hostId])
    if (row === undefined) return undefined
    return {
      hostId: row.host_id,
      publicKey: row.public_key,
      profile: JSON.parse(row.profile),
      firstSeen: row.first_seen,
      lastSeen: row.last_seen,
    }
  }

  async putProbes(probes: ProbeSet): Promise<boolean> {
    const changes = await this.sql.run(
      'insert into model_probes (model_id, probe_set, created_at) values (?, ?, ?) on conflict do nothing',
      [probes.modelId, Buffer.from(encodeProbeSet(probes)), Date.now()],
    )
    return changes === 1
  }

  async getProbes(modelId: string): Promise<ProbeSet | undefined> {
    const row = await this.sql.get<{ probe_set: Buffer }>('select probe_set from model_probes where model_id = ?', [
      modelId,
    ])
    return row === undefined ? undefined : decodeProbeSet(row.probe_set)
  }

  close(): Promise<void> {
    return this.sql.close()
  }
}

/** The embedded default: one SQLite file (WAL, fsynced commits), migrated when opened. */
export class SqliteTrackerStore extends SqlTrackerStore {
  private readonly file: SqliteSql

  constructor(path: string) {
    const file = new SqliteSql(path)
    migrateSqlite(file.db)
    super(file)
    this.file = file
  }

  /** How commits reach the disk: the journal mode and SQLite's synchronous level (2: FULL). */
  get durability(): { journalMode: string; synchronous: number } {
    const db = this.file.db
    return {
      journalMode: String(db.pragma('journal_mode', { simple: true })),
      synchronous: Number(db.pragma('synchronous', { simple: true })),
    }
  }
}

interface ModelRow {
  model_id: string
  manifest: string
  torrent: Buffer
  tokenizer: Buffer | null
  info_hash: string
  published_by: string
  publisher_key: string | null
  published_at: number
}

interface HostRow {
  host_id: string
  public_key: string
  profile: string
  first_seen: number
  last_seen: number
}

function modelFromRow(row: ModelRow): StoredModel {
  return {
    manifest: Manifest.parse(JSON.parse(row.manifest)),
    torrent: row.torrent,
    tokenizer: row.tokenizer ?? Buffer.alloc(0),
    infoHash: row.info_hash,
    publishedBy: row.published_by,
    publisherKey: row.publisher_key,
    publishedAt: row.published_at,
  }
}
