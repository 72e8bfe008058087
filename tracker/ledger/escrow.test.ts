// Host earnings in escrow on a real SQLite file and a real PostgreSQL database, with hosts' real ed25519 keys: pending
// until the settlement window passes, then settled exactly; voided back to each payer when a host is caught.
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { feeOf, REPLAY_STEP_BASE, type Receipt, type ReceiptBody, receiptMessage } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import { MODEL, PRICE, sha, TRACKER, toyMetering } from '../../test/toy-ledger'
import type { TrackerStore } from '../db/store'
import { Accounts, escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import { DEFAULT_SETTLEMENT_WINDOW_MS, Escrow, settlementWindowMs } from './escrow'
import { Metering } from './metering'
import { hopCharge } from './pricing'

const HOUR = 3_600_000
const WINDOW = HOUR
const T0 = 1_700_000_000_000
const earned = (r: Receipt) => hopCharge(PRICE, 4, r) - feeOf(hopCharge(PRICE, 4, r), 1000)

function sign(
  host: NodeIdentity,
  body: Pick<ReceiptBody, 'session' | 'step' | 'blocks' | 'tokens'> & Partial<ReceiptBody>,
): Receipt {
  const full: ReceiptBody = {
    position: 0,
    modelId: 'toy',
    price: PRICE,
    tracker: TRACKER.publicKey,
    ...body,
    hostId: host.id,
    input: sha('i'),
    output: sha('o'),
  }
  return { ...full, signature: host.sign(receiptMessage(full)) }
}

const [hostA, hostB, hostC] = [NodeIdentity.generate(), NodeIdentity.generate(), NodeIdentity.generate()] as [
  NodeIdentity,
  NodeIdentity,
  NodeIdentity,
]
const keys = new Map([hostA, hostB, hostC].map((h) => [h.id, h.publicKey]))

let store: TrackerStore
let metering: Metering
let accounts: Accounts
let escrow: Escrow

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`escrowed host earnings on ${engine.name}`, () => {
    engine.setUp()
    beforeEach(async () => {
      store = await (await engine.fresh()).open()
      accounts = new Accounts(store, 1_000_000)
      metering = toyMetering(store, keys, WINDOW)
      escrow = metering.escrow
    })
    afterEach(async () => {
      metering.close()
      await store.close()
    })

    const ledger = () => store.ledger
    const settled = async (host: NodeIdentity) => await ledger().balance(hostAccount(host.id))
    const pending = async (host: NodeIdentity) => await ledger().balance(escrowAccount(host.id))
    const sound = async () =>
      expect([
        await ledger().total(),
        await ledger().driftedBalances(),
        await ledger().unbalancedTransactions(),
      ]).toEqual([0, [], []])

    /** A session over A [0, 3) and B [3, 4), paid by `accountId`, with `steps` steps settled at `at`. */
    async function serve(
      accountId: string,
      steps: number,
      at: number,
    ): Promise<{ session: string; receipts: Receipt[] }> {
      const session = randomBytes(16).toString('hex')
      const hops = [
        { hostId: hostA.id, blocks: [0, 3] as [number, number] },
        { hostId: hostB.id, blocks: [3, 4] as [number, number] },
      ]
      await metering.issue(session, 'toy', hops, null, at, { maxTokens: 50, promptTokens: 10, accountId })
      const receipts = Array.from({ length: steps }, (_, i) => i + 1).flatMap((step) =>
        hops.map((h) =>
          sign(h.hostId === hostA.id ? hostA : hostB, {
            session,
            step,
            blocks: h.blocks,
            tokens: step === 1 ? 10 : 1,
            position: step === 1 ? 0 : 8 + step,
          }),
        ),
      )
      expect((await metering.settle(session, receipts, at)).every((v) => v.ok)).toBe(true)
      return { session, receipts }
    }

    it(
      'keeps earnings pending, not spendable, until the ' + 'settlement window passes, then settles them exactly',
      async () => {
        const { account } = await accounts.create({ name: 'alice' })
        const { receipts } = await serve(account.accountId, 3, T0)
        const earnedA = receipts.filter((r) => r.hostId === hostA.id).reduce((s, r) => s + earned(r), 0)
        const earnedB = receipts.filter((r) => r.hostId === hostB.id).reduce((s, r) => s + earned(r), 0)
        expect([await settled(hostA), await pending(hostA), await settled(hostB), await pending(hostB)]).toEqual([
          0,
          earnedA,
          0,
          earnedB,
        ])
        expect((await ledger().receipts({ hostId: hostA.id })).map((r) => r.escrow)).toEqual([
          'pending',
          'pending',
          'pending',
        ])
        // A minute short of the window: nothing moves.
        expect(await escrow.release(T0 + WINDOW - 60_000)).toEqual({ releasedMicro: 0, receipts: 0, hosts: 0 })
        expect(await settled(hostA)).toBe(0)
        const entries = await ledger().entryCount()
        expect(await escrow.release(T0 + WINDOW)).toEqual({ releasedMicro: earnedA + earnedB, receipts: 6, hosts: 2 })
        expect([await settled(hostA), await pending(hostA), await settled(hostB), await pending(hostB)]).toEqual([
          earnedA,
          0,
          earnedB,
          0,
        ])
        // One transaction of two legs per host.
        expect((await ledger().entryCount()) - entries).toBe(4)
        expect((await ledger().receipts({ hostId: hostA.id })).map((r) => r.escrow)).toEqual([
          'released',
          'released',
          'released',
        ])
        expect(await escrow.release(T0 + 2 * WINDOW)).toEqual({ releasedMicro: 0, receipts: 0, hosts: 0 })
        expect(await settled(hostA)).toBe(earnedA)
        await sound()
      },
    )

    it('tells each settled receipt’s settled and pending balances, and pays at once with a window of 0', async () => {
      const { account } = await accounts.create()
      const { session } = await serve(account.accountId, 1, T0)
      const [v] = await metering.settle(
        session,
        [sign(hostA, { session, step: 2, blocks: [0, 3], tokens: 1, position: 10 })],
        T0,
      )
      expect(v?.balances).toEqual({
        host: 0,
        pending: await pending(hostA),
        account: await accounts.balance(account.accountId),
      })
      const atOnce = new Metering(
        store.ledger,
        () => MODEL,
        (id) => keys.get(id),
        { prices: { toy: PRICE }, feeBps: 1000 },
        TRACKER.publicKey,
        {
          settlementWindowMs: 0,
        },
      )
      const s = randomBytes(16).toString('hex')
      await atOnce.issue(s, 'toy', [{ hostId: hostC.id, blocks: [0, 4] }], null, T0, {
        maxTokens: 50,
        promptTokens: 10,
        accountId: account.accountId,
      })
      expect(
        (await atOnce.settle(s, [sign(hostC, { session: s, step: 1, blocks: [0, 4], tokens: 10 })], T0))[0]?.ok,
      ).toBe(true)
      atOnce.close()
      expect([await settled(hostC), await pending(hostC)]).toEqual([560 - 56, 0])
      expect((await ledger().receipts({ hostId: hostC.id }))[0]?.escrow).toBe('released')
      await sound()
    })

    it(
      'voids a host’s pending earnings: each payer gets back ' + 'exactly what it paid, and voiding twice refunds once',
      async () => {
        const alice = (await accounts.create({ name: 'alice' })).account.accountId
        const bob = (await accounts.create({ name: 'bob' })).account.accountId
        const a = await serve(alice, 3, T0)
        const b = await serve(bob, 2, T0 + 1000)
        const paidToA = (rs: Receipt[]) =>
          rs.filter((r) => r.hostId === hostA.id).reduce((s, r) => s + hopCharge(PRICE, 4, r), 0)
        const [aliceBefore, bobBefore, feesBefore, pendingB] = [
          await accounts.balance(alice),
          await accounts.balance(bob),
          await ledger().balance(FEE_ACCOUNT),
          await pending(hostB),
        ]
        const voided = await escrow.voidHost(hostA.id, 'failed an audit', T0 + 2000)
        expect(voided).toEqual({
          voidedMicro: [...a.receipts, ...b.receipts]
            .filter((r) => r.hostId === hostA.id)
            .reduce((s, r) => s + earned(r), 0),
          refundedMicro: paidToA(a.receipts) + paidToA(b.receipts),
          receipts: 5,
        })
        expect(await accounts.balance(alice)).toBe(aliceBefore + paidToA(a.receipts))
        expect(await accounts.balance(bob)).toBe(bobBefore + paidToA(b.receipts))
        expect([await pending(hostA), await settled(hostA), await pending(hostB)]).toEqual([0, 0, pendingB])
        expect(await ledger().balance(FEE_ACCOUNT)).toBe(
          feesBefore -
            [...a.receipts, ...b.receipts]
              .filter((r) => r.hostId === hostA.id)
              .reduce((s, r) => s + feeOf(hopCharge(PRICE, 4, r), 1000), 0),
        )
        expect((await ledger().receipts({ hostId: hostA.id })).every((r) => r.escrow === 'voided')).toBe(true)
        // Voided earnings leave the host's charts.
        expect(await ledger().earnings(hostA.id, 'hour', 0)).toEqual([])
        expect(await escrow.voidHost(hostA.id, 'failed an audit', T0 + 3000)).toEqual({
          voidedMicro: 0,
          refundedMicro: 0,
          receipts: 0,
        })
        expect([await accounts.balance(alice), await accounts.balance(bob)]).toEqual([
          aliceBefore + paidToA(a.receipts),
          bobBefore + paidToA(b.receipts),
        ])
        // B's earnings still settle when their window passes.
        await escrow.release(T0 + WINDOW + 1000)
        expect([await settled(hostB), await pending(hostB), await settled(hostA)]).toEqual([pendingB, 0, 0])
        await sound()
      },
    )

    it('never voids earnings already released: only what is still pending goes back', async () => {
      const alice = (await accounts.create()).account.accountId
      await serve(alice, 2, T0)
      await escrow.release(T0 + WINDOW)
      const settledA = await settled(hostA)
      const late = await serve(alice, 1, T0 + WINDOW + 5)
      const before = await accounts.balance(alice)
      const lateCharge = late.receipts
        .filter((r) => r.hostId === hostA.id)
        .reduce((s, r) => s + hopCharge(PRICE, 4, r), 0)
      expect(await escrow.voidHost(hostA.id, 'banned', T0 + WINDOW + 10)).toMatchObject({
        refundedMicro: lateCharge,
        receipts: 1,
      })
      expect([await settled(hostA), await pending(hostA), await accounts.balance(alice)]).toEqual([
        settledA,
        0,
        before + lateCharge,
      ])
      expect((await ledger().receipts({ hostId: hostA.id })).map((r) => r.escrow)).toEqual([
        'voided',
        'released',
        'released',
      ])
      await sound()
    })

    /** A session on A [0, 3) that A fails after three steps; C replays A's inputs; returns what A had pending. */
    async function failOver(
      accountId: string,
      at: number,
    ): Promise<{ session: string; earnedA: number; replays: Receipt[] }> {
      const session = randomBytes(16).toString('hex')
      const routed = { maxTokens: 20, promptTokens: 10 }
      await metering.issue(session, 'toy', [{ hostId: hostA.id, blocks: [0, 3] }], null, at, { ...routed, accountId })
      const served = [1, 2, 3].map((step) =>
        sign(hostA, {
          session,
          step,
          blocks: [0, 3],
          tokens: step === 1 ? 10 : 1,
          position: step === 1 ? 0 : 8 + step,
        }),
      )
      expect((await metering.settle(session, served, at)).every((v) => v.ok)).toBe(true)
      const earnedA = await pending(hostA)
      await metering.issue(session, 'toy', [{ hostId: hostC.id, blocks: [0, 3] }], null, at, {
        ...routed,
        failedHost: hostA.id,
        span: [0, 3],
      })
      const replays = [0, 10, 11].map((position, i) =>
        sign(hostC, { session, step: REPLAY_STEP_BASE + i, blocks: [0, 3], tokens: position === 0 ? 10 : 1, position }),
      )
      return { session, earnedA, replays }
    }

    it(
      'pays a replay from the failed host’s pending earnings, escrow to escrow, and voiding the replacement gives ' +
        'them back',
      async () => {
        const alice = (await accounts.create()).account.accountId
        const { session, earnedA, replays } = await failOver(alice, T0)
        const paid = await accounts.balance(alice)
        expect((await metering.settle(session, replays, T0 + 10)).every((v) => v.ok && v.charged === 0)).toBe(true)
        expect([
          await pending(hostA),
          await pending(hostC),
          await settled(hostA),
          await settled(hostC),
          await accounts.balance(alice),
        ]).toEqual([0, earnedA, 0, 0, paid])
        // C's replays were paid from A: voiding C refunds no payer and puts them back in A's escrow.
        expect(await escrow.voidHost(hostC.id, 'failed a probe', T0 + 20)).toEqual({
          voidedMicro: earnedA,
          refundedMicro: 0,
          receipts: 3,
        })
        expect([await pending(hostA), await pending(hostC), await accounts.balance(alice)]).toEqual([earnedA, 0, paid])
        await escrow.release(T0 + WINDOW)
        expect([await settled(hostA), await pending(hostA)]).toEqual([earnedA, 0])
        await sound()
      },
    )

    it(
      'voiding the failed host takes its replacement’s replay pay back too, so its payer gets back exactly what ' +
        'it paid',
      async () => {
        const alice = (await accounts.create()).account.accountId
        const before = await accounts.balance(alice)
        const { session, earnedA, replays } = await failOver(alice, T0)
        const paid = before - (await accounts.balance(alice))
        await metering.settle(session, replays, T0 + 10)
        expect(await pending(hostC)).toBe(earnedA)
        expect(await escrow.voidHost(hostA.id, 'wrong known answers', T0 + 20)).toEqual({
          voidedMicro: earnedA,
          refundedMicro: paid,
          receipts: 3,
        })
        expect(await accounts.balance(alice)).toBe(before)
        expect([await pending(hostA), await pending(hostC), await settled(hostA), await settled(hostC)]).toEqual([
          0, 0, 0, 0,
        ])
        expect((await ledger().receipts({ session })).every((r) => r.escrow === 'voided')).toBe(true)
        await sound()
      },
    )

    it(
      'takes a replay’s pay only from what the failed host still has pending in the session; the consumer pays ' +
        'the rest',
      async () => {
        const alice = (await accounts.create()).account.accountId
        const { session, earnedA, replays } = await failOver(alice, T0)
        await escrow.release(T0 + WINDOW)
        expect(await settled(hostA)).toBe(earnedA)
        expect((await metering.settle(session, replays, T0 + WINDOW + 10)).every((v) => v.ok)).toBe(true)
        // A's earnings were released: they stay A's, and the consumer pays C for the same work
        expect([await settled(hostA), await pending(hostC)]).toEqual([earnedA, earnedA])
        await sound()
      },
    )

    it('releases pending earnings on its own timer, and stops when closed', async () => {
      const alice = (await accounts.create()).account.accountId
      const { receipts } = await serve(alice, 1, Date.now())
      const quick = new Escrow(store.ledger, 50, { releaseEveryMs: 20 })
      quick.start()
      await vi.waitFor(async () => expect(await settled(hostA)).toBe(earned(receipts[0] as Receipt)), {
        timeout: 2000,
        interval: 20,
      })
      quick.close()
      await sound()
    })

    it(
      'reads the window from the option, else ' + 'NEURON_SETTLEMENT_WINDOW_MS, else a day, and refuses a bad one',
      async () => {
        expect(settlementWindowMs(0, { NEURON_SETTLEMENT_WINDOW_MS: '5' })).toBe(0)
        expect(settlementWindowMs(undefined, { NEURON_SETTLEMENT_WINDOW_MS: '5000' })).toBe(5000)
        expect(settlementWindowMs(undefined, {})).toBe(DEFAULT_SETTLEMENT_WINDOW_MS)
        expect(DEFAULT_SETTLEMENT_WINDOW_MS).toBe(24 * HOUR)
        expect(() => settlementWindowMs(undefined, { NEURON_SETTLEMENT_WINDOW_MS: '1h' })).toThrow(
          /whole number of milliseconds/,
        )
        expect(() => settlementWindowMs(-1, {})).toThrow(/NEURON_SETTLEMENT_WINDOW_MS/)
      },
    )
  })
