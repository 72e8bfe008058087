// The ledger and receipt settlement on a real SQLite file and a real PostgreSQL database, with hosts' real
// ed25519 keys: money is conserved, a step is paid once, balances
// never go negative, bad receipts are refused and logged.
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { feeOf, REPLAY_STEP_BASE } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import { PRICE, sign, toyMetering, toySession } from '../../test/toy-ledger'
import type { TrackerStore } from '../db/store'
import { Accounts, escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import type { Metering } from './metering'
import { hopCharge } from './pricing'

let store: TrackerStore
let metering: Metering
let accounts: Accounts
const hostA = NodeIdentity.generate()
const hostB = NodeIdentity.generate()
const keys = new Map([
  [hostA.id, hostA.publicKey],
  [hostB.id, hostB.publicKey],
])

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`ledger and receipt settlement on ${engine.name}`, () => {
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

    const session = (accountId: string | null) => toySession(metering, [hostA, hostB], accountId)

    it('splits each step between the hops by blocks, keeps a fee, and every transaction sums to zero', async () => {
      const { account } = await accounts.create({ name: 'alice' })
      const s = await session(account.accountId)
      const receipts = [1, 2, 3].flatMap((step) => [
        sign(hostA, { session: s, step, blocks: [0, 3], tokens: step === 1 ? 10 : 1 }),
        sign(hostB, { session: s, step, blocks: [3, 4], tokens: step === 1 ? 10 : 1 }),
      ])
      const verdicts = await metering.settle(s, receipts)
      expect(verdicts.every((v) => v.ok)).toBe(true)
      const charges = receipts.map((r) => hopCharge(PRICE, 4, r))
      // Step 1: 10 prompt tokens × 40 + one completion token × 160 = 560, split 3:1 between the hops.
      expect(charges.slice(0, 2)).toEqual([420, 140])
      const spent = charges.reduce((s, c) => s + c, 0)
      expect(await accounts.balance(account.accountId)).toBe(1_000_000 - spent)
      const earnedA = receipts
        .filter((r) => r.hostId === hostA.id)
        .reduce((s, r) => s + hopCharge(PRICE, 4, r) - feeOf(hopCharge(PRICE, 4, r), 1000), 0)
      // Pending in the host's escrow for the settlement window (escrow.test.ts), not yet spendable.
      expect(await store.ledger.balance(escrowAccount(hostA.id))).toBe(earnedA)
      expect(await store.ledger.balance(hostAccount(hostA.id))).toBe(0)
      expect(await store.ledger.balance(FEE_ACCOUNT)).toBe(charges.reduce((s, c) => s + feeOf(c, 1000), 0))
      expect(await store.ledger.total()).toBe(0)
      expect(await store.ledger.unbalancedTransactions()).toEqual([])
      expect(await store.ledger.driftedBalances()).toEqual([])
      expect(await store.ledger.servedBlockTokens(hostA.id)).toBe(3 * 10 + 3 + 3)
      expect(await store.ledger.earnings(hostA.id, 'hour', 0)).toEqual([
        expect.objectContaining({ modelId: 'toy', earned: earnedA, receipts: 3 }),
      ])
    })

    it(
      'pays a replayed receipt nothing, and refuses a forged one and one for a hop the tracker never issued, each ' +
        'logged against the host',
      async () => {
        const { account } = await accounts.create()
        const s = await session(account.accountId)
        const other = await session(account.accountId)
        const good = sign(hostA, { session: s, step: 1, blocks: [0, 3], tokens: 5 })
        expect((await metering.settle(s, [good]))[0]?.ok).toBe(true)
        const balance = await accounts.balance(account.accountId)
        const [replayed, forged, wrongBlocks, wrongSession, unknown, garbage] = await metering.settle(s, [
          good,
          { ...sign(hostA, { session: s, step: 2, blocks: [0, 3], tokens: 1 }), tokens: 50 },
          sign(hostA, { session: s, step: 3, blocks: [0, 4], tokens: 1 }),
          sign(hostB, { session: other, step: 1, blocks: [3, 4], tokens: 5 }),
          { ...sign(NodeIdentity.generate(), { session: s, step: 4, blocks: [0, 3], tokens: 1 }), hostId: hostA.id },
          { hostId: hostB.id, step: 'x' },
        ])
        // Host and client both hand in each receipt: the second copy is settled already, no fault of the host's.
        expect(replayed).toMatchObject({ code: 'already_settled', charged: 0 })
        expect(forged?.code).toBe('bad_signature')
        expect(wrongBlocks?.code).toBe('route_mismatch')
        expect(wrongSession?.code).toBe('route_mismatch')
        expect(unknown?.code).toBe('bad_signature')
        expect(garbage?.code).toBe('bad_receipt')
        expect((await metering.settle(randomBytes(16).toString('hex'), [good]))[0]?.code).toBe('route_mismatch')
        expect(await accounts.balance(account.accountId)).toBe(balance)
        expect((await store.ledger.rejections(hostA.id)).map((r) => r.code).sort()).toEqual(
          ['bad_signature', 'bad_signature', 'route_mismatch', 'route_mismatch'].sort(),
        )
        expect((await store.ledger.rejections(hostB.id)).map((r) => r.code).sort()).toEqual([
          'bad_receipt',
          'route_mismatch',
        ])
      },
    )

    it(
      'counts a refusal against a host only for a receipt it signed, of a session the tracker routed, for a hop ' +
        'it was not issued',
      async () => {
        const { account } = await accounts.create()
        const s = await session(account.accountId)
        const other = await session(account.accountId)
        const stranger = NodeIdentity.generate()
        const notHers = await metering.settle(s, [
          { ...sign(hostA, { session: s, step: 2, blocks: [0, 3], tokens: 1 }), tokens: 50 },
          { ...sign(stranger, { session: s, step: 3, blocks: [0, 4], tokens: 1 }), hostId: hostA.id },
          { hostId: hostA.id, step: 'x' },
          sign(hostB, { session: other, step: 1, blocks: [3, 4], tokens: 5 }),
        ])
        const unrouted = await metering.settle(randomBytes(16).toString('hex'), [
          sign(hostA, { session: s, step: 1, blocks: [0, 3], tokens: 5 }),
        ])
        // Anyone can hand in such receipts naming any host: refused and listed, never held against it.
        expect([...notHers, ...unrouted].map((v) => [v.code, v.fault])).toEqual([
          ['bad_signature', false],
          ['route_mismatch', false],
          ['bad_receipt', false],
          ['route_mismatch', false],
          ['route_mismatch', false],
        ])
        // Signed by the host itself: a hop it was never issued counts against it; a step off the routed positions does
        // not (hosts take steps in order, so one off the positions is the client's doing:
        // test/admission-attacks.test.ts).
        const routed = randomBytes(16).toString('hex')
        await metering.issue(routed, 'toy', [{ hostId: hostA.id, blocks: [0, 4] }], null, Date.now(), {
          maxTokens: 20,
          promptTokens: 10,
        })
        const hers = [
          ...(await metering.settle(s, [sign(hostA, { session: s, step: 4, blocks: [0, 4], tokens: 1 })])),
          ...(await metering.settle(routed, [
            sign(hostA, { session: routed, step: 3, blocks: [0, 4], tokens: 1, position: 40 }),
          ])),
        ]
        expect(hers.map((v) => [v.code, v.fault])).toEqual([
          ['route_mismatch', true],
          ['position_mismatch', false],
        ])
      },
    )

    it(
      'pays a step once per span however often it is handed in; a replay no failover covers is the consumer’s to ' +
        'pay, once',
      async () => {
        const { account } = await accounts.create()
        const s = await session(account.accountId)
        const step = sign(hostB, { session: s, step: 7, blocks: [3, 4], tokens: 1 })
        const replay = sign(hostB, { session: s, step: REPLAY_STEP_BASE + 3, blocks: [3, 4], tokens: 6 })
        await metering.settle(s, [step, replay, step, replay])
        expect(await store.ledger.receipts({ session: s })).toHaveLength(2)
        const earned = (charge: number) => charge - feeOf(charge, 1000)
        const replayed = hopCharge(PRICE, 4, {
          step: replay.position === 0 ? 1 : 2,
          blocks: replay.blocks,
          tokens: replay.tokens,
        })
        expect(await store.ledger.balance(escrowAccount(hostB.id))).toBe(
          earned(hopCharge(PRICE, 4, step)) + earned(replayed),
        )
        expect(await store.ledger.total()).toBe(0)
      },
    )

    it(
      'pays a step by the tracker’s own count of its tokens, ' + 'never the host’s claim, on the ticket’s terms only',
      async () => {
        const { account } = await accounts.create()
        const s = randomBytes(16).toString('hex')
        await metering.issue(s, 'toy', [{ hostId: hostA.id, blocks: [0, 4] }], null, Date.now(), {
          maxTokens: 20,
          promptTokens: 10,
        })
        await metering.bind(s, account.accountId)
        // The client routed a 10-token prompt; the host claims 1000 prompt tokens for step 1 and 50 for step 2.
        const [prefill, decode] = await metering.settle(s, [
          sign(hostA, { session: s, step: 1, blocks: [0, 4], tokens: 1000, position: 0 }),
          sign(hostA, { session: s, step: 2, blocks: [0, 4], tokens: 50, position: 10 }),
        ])
        expect(prefill).toMatchObject({ ok: true, charged: 10 * 40 + 160 })
        expect(decode).toMatchObject({ ok: true, charged: 160 })
        expect(await accounts.balance(account.accountId)).toBe(1_000_000 - 10 * 40 - 2 * 160)
        const refused = await metering.settle(s, [
          sign(hostA, { session: s, step: 3, blocks: [0, 4], tokens: 1, position: 40 }),
          sign(hostA, { session: s, step: 4, blocks: [0, 4], tokens: 1, position: 12, modelId: 'other' }),
          sign(hostA, {
            session: s,
            step: 5,
            blocks: [0, 4],
            tokens: 1,
            position: 13,
            price: { promptMicroPerToken: 40, completionMicroPerToken: 9000 },
          }),
          sign(hostA, {
            session: s,
            step: 6,
            blocks: [0, 4],
            tokens: 1,
            position: 14,
            tracker: NodeIdentity.generate().publicKey,
          }),
          sign(hostA, { session: s, step: 12, blocks: [0, 4], tokens: 1, position: 20 }),
        ])
        expect(refused.map((v) => v.code)).toEqual([
          'position_mismatch',
          'route_mismatch',
          'route_mismatch',
          'route_mismatch',
          'position_mismatch',
        ])
        expect(refused.map((v) => v.message)).toEqual([
          'step 3 runs from position 11, not 40',
          'receipt for step 4 names model other, not toy',
          "receipt for step 5 names another price than the ticket's",
          expect.stringMatching(/^receipt for step 6 names another tracker/),
          'step 12 runs past the 20 tokens routed',
        ])
        expect(await accounts.balance(account.accountId)).toBe(1_000_000 - 10 * 40 - 2 * 160)
        expect(await store.ledger.total()).toBe(0)
      },
    )

    it(
      'pays a replacement host’s replay after a failover from the failed host’s earnings in the session; the ' +
        'consumer pays only what those do not cover',
      async () => {
        const hostC = NodeIdentity.generate()
        keys.set(hostC.id, hostC.publicKey)
        const { account } = await accounts.create()
        const s = randomBytes(16).toString('hex')
        const routed = { maxTokens: 20, promptTokens: 10 }
        await metering.issue(s, 'toy', [{ hostId: hostA.id, blocks: [0, 3] }], null, Date.now(), routed)
        await metering.bind(s, account.accountId)
        const served = [1, 2, 3].map((step) =>
          sign(hostA, {
            session: s,
            step,
            blocks: [0, 3],
            tokens: step === 1 ? 10 : 1,
            position: step === 1 ? 0 : 8 + step,
          }),
        )
        expect((await metering.settle(s, served)).every((v) => v.ok)).toBe(true)
        const earnedA = await store.ledger.balance(escrowAccount(hostA.id))
        const paidBefore = await accounts.balance(account.accountId)
        const feesBefore = await store.ledger.balance(FEE_ACCOUNT)
        // A fails at step 4; the client asks for its span again and C replays A's three inputs, then one more.
        await metering.issue(s, 'toy', [{ hostId: hostC.id, blocks: [0, 3] }], null, Date.now(), {
          ...routed,
          failedHost: hostA.id,
          span: [0, 3],
        })
        const replays = [0, 10, 11, 12].map((position, i) =>
          sign(hostC, {
            session: s,
            step: REPLAY_STEP_BASE + i,
            blocks: [0, 3],
            tokens: position === 0 ? 10 : 1,
            position,
          }),
        )
        const verdicts = await metering.settle(s, replays)
        // A's earnings pay for the three inputs it was sent; the fourth finds A's share spent, and the consumer pays it
        expect(verdicts.map((v) => [v.ok, v.charged])).toEqual([
          [true, 0],
          [true, 0],
          [true, 0],
          [true, 120],
        ])
        const fourth = 120 - feeOf(120, 1000)
        expect(await store.ledger.balance(escrowAccount(hostC.id))).toBe(earnedA + fourth)
        expect(await store.ledger.balance(escrowAccount(hostA.id))).toBe(0)
        expect(await accounts.balance(account.accountId)).toBe(paidBefore - 120)
        expect(await store.ledger.balance(FEE_ACCOUNT)).toBe(feesBefore + feeOf(120, 1000))
        // Handed in again (by the client too), nothing moves twice.
        expect((await metering.settle(s, replays)).map((v) => v.code)).toEqual(replays.map(() => 'already_settled'))
        expect(await store.ledger.balance(escrowAccount(hostC.id))).toBe(earnedA + fourth)
        // C's own step 4 is the consumer's to pay, as any step.
        expect(
          (
            await metering.settle(s, [sign(hostC, { session: s, step: 4, blocks: [0, 3], tokens: 1, position: 12 })])
          )[0],
        ).toMatchObject({
          ok: true,
          charged: 120,
        })
        expect(await store.ledger.total()).toBe(0)
      },
    )

    it('never lets a balance go below zero', async () => {
      const { account } = await accounts.create({ grantMicro: 100 })
      const s = await session(account.accountId)
      const verdicts = await metering.settle(s, [
        sign(hostA, { session: s, step: 1, blocks: [0, 3], tokens: 1 }),
        sign(hostB, { session: s, step: 1, blocks: [3, 4], tokens: 1 }),
      ])
      // 40 + 160 = 200 per step: the first hop's 150 does not fit in 100; the second's 50 does.
      expect(verdicts.map((v) => v.code ?? 'ok')).toEqual(['insufficient_credits', 'ok'])
      expect(await accounts.balance(account.accountId)).toBe(50)
      expect(await store.ledger.rejections(hostA.id)).toEqual([])
    })
  })
