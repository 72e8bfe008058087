// The gateway's request log per account on a real SQLite file and a real PostgreSQL database: newest first,
// bounded, each request's credits read from the ledger's entries of its session (steps, relays, rent), never another's.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { Accounts, consumerAccount, FEE_ACCOUNT } from './accounts'
import { API_REQUEST_LOG_LIMIT } from './api-requests'

let store: TrackerStore
let accounts: Accounts

/** The account pays `micro` for something of `session` under the idempotency key `key`. */
function pay(accountId: string, key: string, micro: number, at: number) {
  return store.ledger.post({
    kind: key.startsWith('rent:') ? 'rent' : 'charge',
    idempotencyKey: key,
    modelId: 'toy',
    entries: [
      { account: consumerAccount(accountId), amount: -micro },
      { account: FEE_ACCOUNT, amount: micro },
    ],
    at,
  })
}

describe.each(await storeEngines())('the API request log on $name', (engine) => {
  describe.skipIf(engine.skip !== undefined)('', () => {
    engine.setUp()
    beforeEach(async () => {
      store = await (await engine.fresh()).open()
      accounts = new Accounts(store, 1_000_000)
    })
    afterEach(async () => store?.close())

    it(
      'lists an account’s requests newest first with the tokens they ended with and what their sessions were ' +
        'charged',
      async () => {
        const { account: mine } = await accounts.create({ name: 'mine' })
        const { account: other } = await accounts.create({ name: 'other' })
        const t = Date.now()
        const log = store.apiRequests
        await log.started({
          session: 'a1',
          accountId: mine.accountId,
          endpoint: 'chat.completions',
          modelId: 'toy',
          promptTokens: 5,
          startedAt: t,
        })
        await log.started({
          session: 'b1',
          accountId: other.accountId,
          endpoint: 'completions',
          modelId: 'toy',
          promptTokens: 9,
          startedAt: t + 1,
        })
        await log.started({
          session: 'a2',
          accountId: mine.accountId,
          endpoint: 'completions',
          modelId: 'toy',
          promptTokens: 3,
          startedAt: t + 2,
        })
        await pay(mine.accountId, 'a1:0:0-2', 100, t + 3)
        await pay(mine.accountId, 'a1:1:0-2', 40, t + 4)
        await pay(mine.accountId, 'relay:a1:relay-x:1', 7, t + 4)
        await pay(mine.accountId, 'rent:a1', 2, t + 5)
        await pay(other.accountId, 'b1:0:0-2', 999, t + 5)
        await pay(mine.accountId, 'a2:0:0-2', 30, t + 6)
        await log.ended('a1', 2, 'completed')
        await log.ended('b1', 4, 'completed')

        const rows = await log.recent(mine.accountId)
        expect(
          rows.map((r) => [r.session, r.endpoint, r.promptTokens, r.completionTokens, r.status, r.chargedMicro]),
        ).toEqual([
          ['a2', 'completions', 3, 0, 'running', 30],
          ['a1', 'chat.completions', 5, 2, 'completed', 149],
        ])
        expect(rows.reduce((s, r) => s + r.chargedMicro, 0)).toBe(1_000_000 - (await accounts.balance(mine.accountId)))
      },
    )

    it('answers at most the last 100', async () => {
      const { account } = await accounts.create({ name: 'busy' })
      const t = Date.now()
      for (let i = 0; i < API_REQUEST_LOG_LIMIT + 5; i++) {
        await store.apiRequests.started({
          session: `s${i}`,
          accountId: account.accountId,
          endpoint: 'chat.completions',
          modelId: 'toy',
          promptTokens: 1,
          startedAt: t + i,
        })
      }
      const rows = await store.apiRequests.recent(account.accountId, 10_000)
      expect(rows).toHaveLength(API_REQUEST_LOG_LIMIT)
      expect(rows[0]?.session).toBe(`s${API_REQUEST_LOG_LIMIT + 4}`)
    })
  })
})
