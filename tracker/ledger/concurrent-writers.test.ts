// Two trackers on one PostgreSQL database, as two processes would be: each its own pool, posting the
// same and different idempotency keys at once against one account that cannot pay for all of them.
// Nothing is lost or doubled: every key posts once, the account never goes below zero, the books balance.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresCluster, postgresMissing, startPostgres } from '../../test/postgres'
import { PostgresStore } from '../db/postgres-store'
import { Accounts, consumerAccount, escrowAccount, FEE_ACCOUNT } from './accounts'
import type { PostResult, Transaction } from './ledger-posting'
import type { LedgerStore } from './ledger-store'

const missing = await postgresMissing()
const CHARGE = 1_000
const FEE = 100
/** The account can pay for this many charges, no more. */
const AFFORDABLE = 60

describe.skipIf(missing !== undefined)(
  `two tracker instances writing one PostgreSQL ledger${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    let cluster: PostgresCluster
    let a: PostgresStore
    let b: PostgresStore
    beforeAll(async () => {
      cluster = await startPostgres()
      const url = await cluster.createDatabase()
      // Both open (and migrate) at once, as two trackers starting together would.
      ;[a, b] = await Promise.all([PostgresStore.open(url, { poolSize: 4 }), PostgresStore.open(url, { poolSize: 4 })])
    })
    afterAll(async () => {
      await a?.close()
      await b?.close()
      await cluster?.stop()
    })

    const charge = (key: string, accountId: string, hostId: string): Transaction => ({
      kind: 'charge',
      idempotencyKey: key,
      modelId: 'toy',
      entries: [
        { account: consumerAccount(accountId), amount: -CHARGE },
        { account: escrowAccount(hostId), amount: CHARGE - FEE },
        { account: FEE_ACCOUNT, amount: FEE },
      ],
      noOverdraft: consumerAccount(accountId),
      at: Date.now(),
    })

    it(
      'posts each key once and never overdraws, with both ' + 'instances posting the same and different keys at once',
      async () => {
        const { account } = await new Accounts(a, AFFORDABLE * CHARGE).create({ name: 'shared' })
        const hosts = ['h1', 'h2', 'h3']
        // 40 keys both instances post (a host's copy and a client's copy of
        // one receipt), 40 only A posts, 40 only B: 120 keys, 60 affordable.
        const shared = Array.from({ length: 40 }, () => randomBytes(8).toString('hex'))
        const onlyA = Array.from({ length: 40 }, () => randomBytes(8).toString('hex'))
        const onlyB = Array.from({ length: 40 }, () => randomBytes(8).toString('hex'))
        const post = (store: LedgerStore, key: string, i: number) =>
          store.post(charge(key, account.accountId, hosts[i % hosts.length] as string))
        // Some in batches of three per transaction (as a step's receipts settle), some one by one.
        const batch = (store: LedgerStore, keys: string[]) =>
          store.atomically(async (tx) => {
            const results: PostResult[] = []
            for (const [i, key] of keys.entries()) results.push(await post(tx, key, i))
            return results
          })
        const runs: Promise<{ key: string; result: PostResult }[]>[] = []
        for (let i = 0; i < 40; i += 4) {
          const slice = (keys: string[]) => keys.slice(i, i + 4)
          const one = async (store: LedgerStore, keys: string[]) =>
            Promise.all(keys.map(async (key, j) => ({ key, result: await post(store, key, j) })))
          const many = async (store: LedgerStore, keys: string[]) =>
            (await batch(store, keys)).map((result, j) => ({ key: keys[j] as string, result }))
          runs.push(
            one(a.ledger, slice(shared)),
            many(b.ledger, slice(shared)),
            many(a.ledger, slice(onlyA)),
            one(b.ledger, slice(onlyB)),
          )
        }
        const outcomes = (await Promise.all(runs)).flat()

        const postedPerKey = new Map<string, number>()
        for (const { key, result } of outcomes)
          if (result.posted) postedPerKey.set(key, (postedPerKey.get(key) ?? 0) + 1)
        // Nothing doubled: no key posted twice, whichever instance got it.
        expect([...postedPerKey.values()].every((n) => n === 1)).toBe(true)
        // Nothing lost: the account paid for exactly as many charges as it could, each one on the books.
        expect(postedPerKey.size).toBe(AFFORDABLE)
        const refusals = outcomes.filter((o) => !o.result.posted).map((o) => (o.result.posted ? '' : o.result.reason))
        expect(
          refusals.filter((r) => r === 'duplicate').length + refusals.filter((r) => r === 'insufficient').length,
        ).toBe(outcomes.length - AFFORDABLE)
        for (const store of [a, b]) {
          const ledger = store.ledger
          expect(await ledger.balance(consumerAccount(account.accountId))).toBe(0)
          expect(await ledger.balance(FEE_ACCOUNT)).toBe(AFFORDABLE * FEE)
          const escrowed = await Promise.all(hosts.map((h) => ledger.balance(escrowAccount(h))))
          expect(escrowed.reduce((s, x) => s + x, 0)).toBe(AFFORDABLE * (CHARGE - FEE))
          expect(await ledger.total()).toBe(0)
          expect(await ledger.unbalancedTransactions()).toEqual([])
          expect(await ledger.driftedBalances()).toEqual([])
          // The grant's two legs and three legs per charge.
          expect(await ledger.entryCount()).toBe(2 + 3 * AFFORDABLE)
        }
        console.log(
          `two instances, ${outcomes.length} postings of ${shared.length + onlyA.length + onlyB.length} keys: ` +
            `${AFFORDABLE} posted, ` +
            `${refusals.filter((r) => r === 'duplicate').length} duplicates and ` +
            `${refusals.filter((r) => r === 'insufficient').length} refused for credits; ` +
            `serialization failures retried: ${a.postgres.retries + b.postgres.retries}`,
        )
      },
    )
  },
)
