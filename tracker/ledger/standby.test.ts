// Paid twins (issue 34): the twins a route names to stand by for a hop share the standby fee out of every step that
// hop is paid for, in the step's own transaction, on a real SQLite file and a real PostgreSQL database with the hosts'
// real ed25519 keys. The payer pays the route's price as without twins; the hop's host earns the fee less.
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { feeOf } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import { PRICE, sign, toyMetering } from '../../test/toy-ledger'
import type { TrackerStore } from '../db/store'
import { Accounts, escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import type { Metering } from './metering'
import { hopCharge } from './pricing'
import { DEFAULT_STANDBY_BPS, standbyShares } from './standby'

let store: TrackerStore
let metering: Metering
let accounts: Accounts
const [hostA, hostB, twinC, twinD] = [0, 1, 2, 3].map(() => NodeIdentity.generate()) as [
  NodeIdentity,
  NodeIdentity,
  NodeIdentity,
  NodeIdentity,
]
const keys = new Map([hostA, hostB, twinC, twinD].map((h) => [h.id, h.publicKey]))

/** A session routed [0, 3) on A (C and D named to stand by) and [3, 4) on B (no twin), paid by `accountId`. */
async function session(accountId: string): Promise<string> {
  const id = randomBytes(16).toString('hex')
  await metering.issue(id, 'toy', [
    { hostId: hostA.id, blocks: [0, 3], standby: [twinC.id, twinD.id] },
    { hostId: hostB.id, blocks: [3, 4] },
  ])
  await metering.bind(id, accountId)
  return id
}

/** Each twin's share of one step's charge: 5 % of it, split between the two. */
const share = (charge: number) => Math.floor((charge * DEFAULT_STANDBY_BPS) / 10_000 / 2)

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`standby fees on ${engine.name}`, () => {
    engine.setUp()
    beforeEach(async () => {
      store = await (await engine.fresh()).open()
      accounts = new Accounts(store, 1_000_000)
      metering = toyMetering(store, keys, 3_600_000)
    })
    afterEach(async () => {
      metering.close()
      await store.close()
    })

    it(
      "pays the twins named for a hop 5 % of each of its steps, out of the host's share, settled at once; the " +
        'payer pays the route’s price, a hop without twins is paid in full, and a step handed in twice pays once',
      async () => {
        const { account } = await accounts.create({ name: 'alice' })
        const s = await session(account.accountId)
        const receipts = [1, 2, 3].flatMap((step) => [
          sign(hostA, { session: s, step, blocks: [0, 3], tokens: step === 1 ? 10 : 1 }),
          sign(hostB, { session: s, step, blocks: [3, 4], tokens: step === 1 ? 10 : 1 }),
        ])
        const verdicts = await metering.settle(s, receipts)
        expect(verdicts.every((v) => v.ok)).toBe(true)
        // the host and the client both hand in every receipt: the second pays nobody again
        expect((await metering.settle(s, receipts)).every((v) => v.code === 'already_settled')).toBe(true)

        const chargesA = [1, 2, 3].map((step) =>
          hopCharge(PRICE, 4, { step, tokens: step === 1 ? 10 : 1, blocks: [0, 3] }),
        )
        const chargesB = [1, 2, 3].map((step) =>
          hopCharge(PRICE, 4, { step, tokens: step === 1 ? 10 : 1, blocks: [3, 4] }),
        )
        const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
        const standbyEach = sum(chargesA.map(share))
        expect(standbyEach).toBeGreaterThan(0)
        // the twins' standby fee, settled (spendable) at once: they served nothing, so nothing waits for an audit
        expect(await store.ledger.balance(hostAccount(twinC.id))).toBe(standbyEach)
        expect(await store.ledger.balance(hostAccount(twinD.id))).toBe(standbyEach)
        // A earns its steps less the swarm's fee and the twins' shares; B, with no twin, its steps less the fee
        const fees = sum([...chargesA, ...chargesB].map((c) => feeOf(c, 1000)))
        expect(await store.ledger.balance(escrowAccount(hostA.id))).toBe(
          sum(chargesA.map((c) => c - feeOf(c, 1000) - 2 * share(c))),
        )
        expect(await store.ledger.balance(escrowAccount(hostB.id))).toBe(sum(chargesB.map((c) => c - feeOf(c, 1000))))
        expect(await store.ledger.balance(FEE_ACCOUNT)).toBe(fees)
        // the payer pays the route's price, no more
        expect(await accounts.balance(account.accountId)).toBe(1_000_000 - sum(chargesA) - sum(chargesB))
        // each settled verdict of A says what its twins got (their dashboards hear it)
        expect(verdicts.filter((v) => v.hostId === hostA.id).map((v) => v.standby)).toEqual(
          chargesA.map((c) => [
            [twinC.id, share(c)],
            [twinD.id, share(c)],
          ]),
        )
        expect(await store.ledger.total()).toBe(0)
        expect(await store.ledger.unbalancedTransactions()).toEqual([])
      },
    )

    it(
      'a host voided after an audit refunds the payer in full; the twins keep theirs (they stood by, and the ' +
        "audit needed one): the swarm's fee account pays it",
      async () => {
        const { account } = await accounts.create({ name: 'bob' })
        const s = await session(account.accountId)
        const receipts = [1, 2].map((step) =>
          sign(hostA, { session: s, step, blocks: [0, 3], tokens: step === 1 ? 10 : 1 }),
        )
        expect((await metering.settle(s, receipts)).every((v) => v.ok)).toBe(true)
        const charges = [1, 2].map((step) => hopCharge(PRICE, 4, { step, tokens: step === 1 ? 10 : 1, blocks: [0, 3] }))
        const twinsGot = 2 * charges.map(share).reduce((a, b) => a + b, 0)
        await metering.escrow.voidHost(hostA.id, 'failed an audit')
        expect(await store.ledger.balance(escrowAccount(hostA.id))).toBe(0)
        expect(await accounts.balance(account.accountId)).toBe(1_000_000)
        expect(await store.ledger.balance(FEE_ACCOUNT)).toBe(-twinsGot)
        expect(
          (await store.ledger.balance(hostAccount(twinC.id))) + (await store.ledger.balance(hostAccount(twinD.id))),
        ).toBe(twinsGot)
        expect(await store.ledger.total()).toBe(0)
      },
    )
  })

describe('standbyShares', () => {
  const hops = [
    { hostId: 'a', blocks: [0, 3] as const, standby: ['c', 'd', 'e'] },
    { hostId: 'b', blocks: [3, 4] as const },
  ]
  it('gives at most two twins an even share of the fee, the remainder to the host; none to a hop without twins', () => {
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 3] }, 1_000, 500, null)).toEqual([
      ['c', 25],
      ['d', 25],
    ])
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 3] }, 99, 500, null)).toEqual([
      ['c', 2],
      ['d', 2],
    ])
    expect(standbyShares(hops, { hostId: 'b', blocks: [3, 4] }, 1_000, 500, null)).toEqual([])
    // another span of the same host is another hop
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 2] }, 1_000, 500, null)).toEqual([])
  })
  it("never pays the payer's own node or the host itself as a twin, nor anything at a zero fee or charge", () => {
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 3] }, 1_000, 500, 'c')).toEqual([
      ['d', 25],
      ['e', 25],
    ])
    const self = [{ hostId: 'a', blocks: [0, 3] as const, standby: ['a', 'c'] }]
    expect(standbyShares(self, { hostId: 'a', blocks: [0, 3] }, 1_000, 500, null)).toEqual([['c', 50]])
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 3] }, 1_000, 0, null)).toEqual([])
    expect(standbyShares(hops, { hostId: 'a', blocks: [0, 3] }, 0, 500, null)).toEqual([])
  })
  it("takes the twins of the hop's last issue (a failover re-routes the span with its own)", () => {
    const again = [...hops, { hostId: 'a', blocks: [0, 3] as const, standby: ['f'] }]
    expect(standbyShares(again, { hostId: 'a', blocks: [0, 3] }, 1_000, 500, null)).toEqual([['f', 50]])
  })
})
