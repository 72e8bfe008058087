import { createHash } from 'node:crypto'
import type { Sql } from '../db/sql'
import { type AccountRow, accountFromRow, type StoredAccount } from './ledger-store'

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** Accounts' API keys (`nk-…`), kept as their sha256 only: a request's key finds its account. */
export class ApiKeys {
  constructor(private readonly db: Sql) {}

  async add(accountId: string, apiKey: string, at: number): Promise<void> {
    await this.db.run('insert into api_keys (key_hash, account_id, created_at) values (?, ?, ?)', [
      hashApiKey(apiKey),
      accountId,
      at,
    ])
  }

  /**
   * Drops every API key of the account, then keeps `apiKey` as its
   * one key (null: none); requests with a dropped key get 401 at once.
   */
  async replace(accountId: string, apiKey: string | null, at: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('delete from api_keys where account_id = ?', [accountId])
      if (apiKey !== null)
        await tx.run('insert into api_keys (key_hash, account_id, created_at) values (?, ?, ?)', [
          hashApiKey(apiKey),
          accountId,
          at,
        ])
    })
  }

  async accountOf(apiKey: string): Promise<StoredAccount | undefined> {
    const row = await this.db.get<AccountRow>(
      'select a.* from api_keys k join accounts a using (account_id) where k.key_hash = ?',
      [hashApiKey(apiKey)],
    )
    return row === undefined ? undefined : accountFromRow(row)
  }
}
