import Database from 'better-sqlite3'
import { decodeProbeSet, encodeProbeSet, type HardwareProfile, Manifest, type ProbeSet } from '../protocol'
import { CHECKS_SCHEMA, ChecksStore } from './checks/checks-store'
import { ESCROW_SCHEMA } from './ledger/escrowed-receipts'
import { type LedgerStore, SqliteLedgerStore } from './ledger/ledger-store'
import { ROUTED_SESSIONS_SCHEMA } from './ledger/routed-sessions'

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
 * The tracker's durable state behind one narrow interface, so a PostgreSQL implementation can
 * replace SQLite when one machine is outgrown; callers never see SQL.
 */
export interface TrackerStore {
  /** Adds a model; false when its id is taken (a published model never changes). */
  putModel(model: StoredModel): boolean
  getModel(modelId: string): StoredModel | undefined
  listModels(): StoredModel[]
  upsertHost(host: StoredHost): void
  getHost(hostId: string): StoredHost | undefined
  /** Keeps a model's secret probe set; false when it already has one (the first set stays). */
  putProbes(probes: ProbeSet): boolean
  getProbes(modelId: string): ProbeSet | undefined
  /** Accounts, keys, the ledger, receipts and reputation history. */
  readonly ledger: LedgerStore
  /** What the tracker's checks found of each host, and its reputation tallies. */
  readonly checks: ChecksStore
  close(): void
}

/** Versioned migrations: each runs once, in order, inside a transaction. Append, never edit. */
const MIGRATIONS: readonly string[] = [
  `create table models (
     model_id text primary key,
     manifest text not null,
     torrent blob not null,
     info_hash text not null unique,
     published_by text not null,
     published_at integer not null
   );
   create table hosts (
     host_id text primary key,
     public_key text not null unique,
     profile text not null,
     first_seen integer not null,
     last_seen integer not null
   );`,
  // Clients tokenize and render chats with the model's own vocabulary: a metadata-only GGUF.
  'alter table models add column tokenizer blob',
  // Accounts, API keys (sha256 only) and the append-only double-entry ledger (integer micro-credits).
  `create table accounts (
     account_id text primary key,
     name text not null,
     public_key text unique,
     created_at integer not null
   );
   create table api_keys (
     key_hash text primary key,
     account_id text not null references accounts(account_id),
     created_at integer not null
   );
   create table ledger_transactions (
     txn_id integer primary key autoincrement,
     kind text not null,
     idempotency_key text unique,
     model_id text,
     created_at integer not null
   );
   create table ledger_entries (
     entry_id integer primary key autoincrement,
     txn_id integer not null references ledger_transactions(txn_id),
     account text not null,
     amount integer not null,
     created_at integer not null
   );
   create index ledger_entries_account on ledger_entries(account, created_at);
   -- Running balances, kept in the same SQLite transaction as the entries they sum.
   create table ledger_balances (
     account text primary key,
     amount integer not null
   );
   create table receipts (
     idempotency_key text primary key,
     session text not null,
     step integer not null,
     host_id text not null,
     block_begin integer not null,
     block_end integer not null,
     tokens integer not null,
     model_id text not null,
     account_id text,
     txn_id integer,
     host_earned integer not null,
     body text not null,
     created_at integer not null
   );
   create index receipts_host on receipts(host_id, created_at);
   create table receipt_rejections (
     rejection_id integer primary key autoincrement,
     host_id text not null,
     session text,
     step integer,
     code text not null,
     message text not null,
     created_at integer not null
   );
   create index receipt_rejections_host on receipt_rejections(host_id, created_at);
   create table reputation_history (
     host_id text not null,
     at integer not null,
     score real not null,
     components text not null
   );
   create index reputation_history_host on reputation_history(host_id, at);`,
  // Who may publish a model again (identically): the key that published it first.
  'alter table models add column publisher_key text',
  // Routed sessions and their credit holds: a restart loses and doubles neither.
  ROUTED_SESSIONS_SCHEMA,
  // Host earnings wait in escrow for a settlement window; each receipt says whether they are pending, released or voided.
  ESCROW_SCHEMA,
  // Known-answer probes, audits and bans per host, and reputation tallies: a restart resets neither.
  CHECKS_SCHEMA,
  // The publisher's secret known-answer probes per model (tracker/probe-codec.ts): never served.
  `create table model_probes (
     model_id text primary key references models(model_id),
     probe_set blob not null,
     created_at integer not null
   );`,
]

export class SqliteTrackerStore implements TrackerStore {
  private readonly db: Database.Database
  readonly ledger: LedgerStore
  readonly checks: ChecksStore

  constructor(path: string) {
    this.db = new Database(path)
    this.db.pragma('journal_mode = WAL')
    // FULL: each commit is fsynced before it returns, so a power cut cannot take back a settled credit
    // (NORMAL in WAL mode may lose the last commits).
    this.db.pragma('synchronous = FULL')
    this.migrate()
    this.ledger = new SqliteLedgerStore(this.db)
    this.checks = new ChecksStore(this.db)
  }

  /** How commits reach the disk: the journal mode and SQLite's synchronous level (2: FULL). */
  get durability(): { journalMode: string; synchronous: number } {
    return { journalMode: String(this.db.pragma('journal_mode', { simple: true })), synchronous: Number(this.db.pragma('synchronous', { simple: true })) }
  }

  /** The schema version now in force (number of migrations applied). */
  get schemaVersion(): number {
    return (this.db.prepare('select max(version) as v from schema_migrations').get() as { v: number | null }).v ?? 0
  }

  private migrate(): void {
    this.db.exec('create table if not exists schema_migrations (version integer primary key, applied_at integer not null)')
    const current = this.schemaVersion
    MIGRATIONS.forEach((sql, i) => {
      const version = i + 1
      if (version <= current) return
      this.db.transaction(() => {
        this.db.exec(sql)
        this.db.prepare('insert into schema_migrations (version, applied_at) values (?, ?)').run(version, Date.now())
      })()
    })
  }

  putModel(m: StoredModel): boolean {
    const { changes } = this.db
      .prepare(
        `insert into models (model_id, manifest, torrent, tokenizer, info_hash, published_by, publisher_key, published_at) values (?, ?, ?, ?, ?, ?, ?, ?)
         on conflict do nothing`,
      )
      .run(m.manifest.modelId, JSON.stringify(m.manifest), m.torrent, m.tokenizer, m.infoHash, m.publishedBy, m.publisherKey, m.publishedAt)
    return changes === 1
  }

  getModel(modelId: string): StoredModel | undefined {
    const row = this.db.prepare('select * from models where model_id = ?').get(modelId) as ModelRow | undefined
    return row === undefined ? undefined : modelFromRow(row)
  }

  listModels(): StoredModel[] {
    return (this.db.prepare('select * from models order by model_id').all() as ModelRow[]).map(modelFromRow)
  }

  upsertHost(h: StoredHost): void {
    this.db
      .prepare(
        `insert into hosts (host_id, public_key, profile, first_seen, last_seen) values (?, ?, ?, ?, ?)
         on conflict(host_id) do update set profile = excluded.profile, last_seen = excluded.last_seen`,
      )
      .run(h.hostId, h.publicKey, JSON.stringify(h.profile), h.firstSeen, h.lastSeen)
  }

  getHost(hostId: string): StoredHost | undefined {
    const row = this.db.prepare('select * from hosts where host_id = ?').get(hostId) as HostRow | undefined
    if (row === undefined) return undefined
    return { hostId: row.host_id, publicKey: row.public_key, profile: JSON.parse(row.profile), firstSeen: row.first_seen, lastSeen: row.last_seen }
  }

  putProbes(probes: ProbeSet): boolean {
    const insert = this.db.prepare('insert into model_probes (model_id, probe_set, created_at) values (?, ?, ?) on conflict do nothing')
    return insert.run(probes.modelId, encodeProbeSet(probes), Date.now()).changes === 1
  }

  getProbes(modelId: string): ProbeSet | undefined {
    const row = this.db.prepare('select probe_set from model_probes where model_id = ?').get(modelId) as { probe_set: Buffer } | undefined
    return row === undefined ? undefined : decodeProbeSet(row.probe_set)
  }

  close(): void {
    this.db.close()
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
