import type { Sql } from '../db/sql'
import { consumerAccount } from './account-names'

/** One gateway generation, as its account's request log shows it. */
export interface ApiRequestRecord {
  readonly session: string
  readonly accountId: string
  /**
   * The route that asked: 'chat.completions', 'completions', 'ollama.chat', 'ollama.generate' or 'anthropic.messages'.
   */
  readonly endpoint: string
  readonly modelId: string
  readonly promptTokens: number
  /** So far while it runs; the count its response's `usage` gave once it ended. */
  readonly completionTokens: number
  /** 'running', 'completed', 'cancelled' (the caller hung up), or the error code it ended with. */
  readonly status: string
  readonly startedAt: number
}

/** How many requests an account's log answers at most. */
export const API_REQUEST_LOG_LIMIT = 100

export const API_REQUESTS_SCHEMA = `create table api_requests (
     session text primary key,
     account_id text not null,
     endpoint text not null,
     model_id text not null,
     prompt_tokens integer not null,
     completion_tokens integer not null,
     status text not null,
     started_at integer not null
   );
   create index api_requests_account on api_requests(account_id, started_at);`

interface Row {
  session: string
  account_id: string
  endpoint: string
  model_id: string
  prompt_tokens: number
  completion_tokens: number
  status: string
  started_at: number
}

/**
 * The gateway's requests per account, kept in the tracker's store (either engine). What each cost is not kept
 * here but read from the ledger when asked: its session's step charges, relay fees and rent, however late they settle.
 */
export class ApiRequests {
  constructor(private readonly db: Sql) {}

  async started(r: Omit<ApiRequestRecord, 'completionTokens' | 'status'>): Promise<void> {
    await this.db.run(
      `insert into api_requests (session, account_id, endpoint, model_id, prompt_tokens, completion_tokens, ` +
        `status, started_at) values (?, ?, ?, ?, ?, 0, 'running', ?)`,
      [r.session, r.accountId, r.endpoint, r.modelId, r.promptTokens, r.startedAt],
    )
  }

  async ended(session: string, completionTokens: number, status: string): Promise<void> {
    await this.db.run('update api_requests set completion_tokens = ?, status = ? where session = ?', [
      completionTokens,
      status.slice(0, 64),
      session,
    ])
  }

  /**
   * The account's latest requests, newest first, at most `limit`
   * (bounded by API_REQUEST_LOG_LIMIT), each with what it was charged.
   */
  async recent(
    accountId: string,
    limit = API_REQUEST_LOG_LIMIT,
  ): Promise<(ApiRequestRecord & { readonly chargedMicro: number })[]> {
    const rows = await this.db.all<Row>(
      'select * from api_requests where account_id = ? order by started_at desc, session desc limit ?',
      [accountId, Math.max(0, Math.min(limit, API_REQUEST_LOG_LIMIT))],
    )
    if (rows.length === 0) return []
    // One query for every row: the account's entries since each request began, in its session's transactions: a
    // step's charge (`<session>:<step>:<blocks>`), a relay's fee (`relay:<session>:…`) and its rent (`rent:<session>`).
    const charges = await this.db.all<{ session: string; charged: number | string | null }>(
      `select r.session as session, -sum(e.amount) as charged
         from api_requests r
         join ledger_entries e on e.account = ? and e.created_at >= r.started_at
         join ledger_transactions t on t.txn_id = e.txn_id
        where r.session in (${rows.map(() => '?').join(', ')})
          and (t.idempotency_key like r.session || ':%' or t.idempotency_key like 'relay:' || r.session || ':%' or
            t.idempotency_key = 'rent:' || r.session)
        group by r.session`,
      [consumerAccount(accountId), ...rows.map((r) => r.session)],
    )
    const chargedBy = new Map(charges.map((c) => [c.session, Number(c.charged ?? 0)]))
    return rows.map((r) => ({
      session: r.session,
      accountId: r.account_id,
      endpoint: r.endpoint,
      modelId: r.model_id,
      promptTokens: Number(r.prompt_tokens),
      completionTokens: Number(r.completion_tokens),
      status: r.status,
      startedAt: Number(r.started_at),
      chargedMicro: chargedBy.get(r.session) ?? 0,
    }))
  }
}
