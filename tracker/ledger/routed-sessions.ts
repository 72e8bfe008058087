import type { Sql } from '../db/sql'
import type { RoutedTokens } from './receipt-terms'

/** A route the tracker issued for a session, as kept across restarts. */
export interface StoredRoute {
  readonly session: string
  readonly modelId: string
  readonly issuedTo: string | null
  /**
   * The client's public key: receipts are paid only with its step
   * signatures (null: routed without one, or before it was kept).
   */
  readonly clientKey: string | null
  readonly accountId: string | null
  /** What the client declared in route.plan, with a conversation's later turns (absent for routes issued without). */
  readonly routed: RoutedTokens | undefined
  readonly hops: readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[]
  /**
   * Hops the client gave up on (route.plan's failedHost with its span): their earnings pay the replacements' replays.
   */
  readonly failed: readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[]
  /** Priced when routed: a restart with other prices does not change a session's. */
  readonly price: { readonly promptMicroPerToken: number; readonly completionMicroPerToken: number }
  readonly savedAt: number
}

/** Routed sessions, in the tracker's store: a restart loses and doubles none (their credit holds: credit-holds.ts). */
export class RoutedSessions {
  constructor(private readonly db: Sql) {}

  async saveRoute(r: StoredRoute): Promise<void> {
    await this.db.run(
      `insert into routed_sessions (session, model_id, issued_to, client_key, account_id, routed, hops, failed,
        price, saved_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         on conflict(session) do update set account_id = excluded.account_id, routed = excluded.routed, hops =
           excluded.hops, failed = excluded.failed, saved_at = excluded.saved_at`,
      [
        r.session,
        r.modelId,
        r.issuedTo,
        r.clientKey,
        r.accountId,
        r.routed === undefined ? null : JSON.stringify(r.routed),
        JSON.stringify(r.hops),
        JSON.stringify(r.failed),
        JSON.stringify(r.price),
        r.savedAt,
      ],
    )
  }

  async route(session: string): Promise<StoredRoute | undefined> {
    const row = await this.db.get<RouteRow>('select * from routed_sessions where session = ?', [session])
    if (row === undefined) return undefined
    return {
      session: row.session,
      modelId: row.model_id,
      issuedTo: row.issued_to,
      clientKey: row.client_key ?? null,
      accountId: row.account_id,
      routed: row.routed === null ? undefined : JSON.parse(row.routed),
      hops: JSON.parse(row.hops),
      failed: JSON.parse(row.failed),
      price: JSON.parse(row.price),
      savedAt: row.saved_at,
    }
  }

  async forgetRoutesBefore(savedAt: number): Promise<void> {
    await this.db.run('delete from routed_sessions where saved_at < ?', [savedAt])
  }

  /**
   * What a failed host's earnings from a session can still pay for replays: what it earned there less
   * every replay already paid in the session (counted against it,
   * so nothing is paid twice); voided receipts count for nothing.
   */
  async forfeitable(session: string, failedHost: string, replayBase: number): Promise<number> {
    const row = await this.db.get<{ left: number }>(
      `select coalesce(sum(case when host_id = ? and step < ? then host_earned else 0 end), 0)
              - coalesce(sum(case when step >= ? then host_earned else 0 end), 0) as left from receipts where session
                = ? and escrow != 'voided'`,
      [failedHost, replayBase, replayBase, session],
    )
    return Math.max(0, row?.left ?? 0)
  }
}

/** The migration that adds the tables (appended to the store's list). */
export const ROUTED_SESSIONS_SCHEMA = `create table routed_sessions (
     session text primary key,
     model_id text not null,
     issued_to text,
     account_id text,
     routed text,
     hops text not null,
     failed text not null,
     price text not null,
     saved_at integer not null
   );
   create index routed_sessions_saved on routed_sessions(saved_at);
   create table credit_holds (
     session text primary key,
     account_id text not null,
     held_micro integer not null,
     max_tokens integer not null,
     created_at integer not null
   );`

interface RouteRow {
  session: string
  model_id: string
  issued_to: string | null
  client_key: string | null
  account_id: string | null
  routed: string | null
  hops: string
  failed: string
  price: string
  saved_at: number
}
