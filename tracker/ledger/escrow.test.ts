// Host earnings in escrow on a real SQLite file, with hosts' real ed25519 keys: pending until the
// settlement window passes, then settled exactly; voided back to each payer when a host is caught.
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { feeOf, REPLAY_STEP_BASE, type Receipt, type ReceiptBody, receiptMessage } from '../../protocol'
import { scratchDir } from '../../test/models'
import { SqliteTrackerStore } from '../store'
import { Accounts, escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import { DEFAULT_SETTLEMENT_WINDOW_MS, Escrow, settlementWindowMs } from './escrow'
import { Metering } from './metering'
import { hopCharge } from './pricing'

const MODEL = { modelId: 'toy', nLayer: 4, bytesPerBlock: [1e9, 1e9, 1e9, 1e9] }
const PRICE = { promptMicroPerToken: 40, completionMicroPerToken: 160 }
const HOUR = 3_600_000
const WINDOW = HOUR
const T0 = 1_700_000_000_000
const TRACKER = NodeIdentity.generate()
const sha = (s: string) => createHash('sha256').update(s).digest('hex')
const earned = (r: Receipt) => hopCharge(PRICE, 4, r) - feeOf(hopCharge(PRICE, 4, r), 1000)

function sign(host: NodeIdentity, body: Pick<ReceiptBody, 'session' | 'step' | 'blocks' | 'tokens'> & Partial<ReceiptBody>): Receipt {
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

const [hostA, hostB, hostC] = [NodeIdentity.generate(), NodeIdentity.generate(), NodeIdentity.generate()] as [NodeIdentity, NodeIdentity, NodeIdentity]
const keys = new Map([hostA, hostB, hostC].map((h) => [h.id, h.publicKey]))

let cleanup: () => Promise<void> = async () => {}
let store: SqliteTrackerStore
let metering: Metering
let accounts: Accounts
let escrow: Escrow

describe('escrowed host earnings', () => {
  beforeEach(async () => {
    const scratch = await scratchDir()
    cleanup = scratch.cleanup
    store = new SqliteTrackerStore(join(scratch.dir, 'ledger.sqlite'))
    accounts = new Accounts(store.ledger, 1_000_000)
    metering = new Metering(
      store.ledger,
      () => MODEL,
      (id) => keys.get(id),
      { prices: { toy: PRICE }, feeBps: 1000 },
      TRACKER.publicKey,
      {
        settlementWindowMs: WINDOW,
      },
    )
    escrow = metering.escrow
  })
  afterEach(async () => {
    metering.close()
    store.close()
    await cleanup()
  })

  const ledger = () => store.ledger
  const settled = (host: NodeIdentity) => ledger().balance(hostAccount(host.id))
  const pending = (host: NodeIdentity) => ledger().balance(escrowAccount(host.id))
  const sound = () => expect([ledger().total(), ledger().driftedBalances(), ledger().unbalancedTransactions()]).toEqual([0, [], []])

  /** A session over A [0, 3) and B [3, 4), paid by `accountId`, with `steps` steps settled at `at`. */
  function serve(accountId: string, steps: number, at: number): { session: string; receipts: Receipt[] } {
    const session = randomBytes(16).toString('hex')
    const hops = [
      { hostId: hostA.id, blocks: [0, 3] as [number, number] },
      { hostId: hostB.id, blocks: [3, 4] as [number, number] },
    ]
    metering.issue(session, 'toy', hops, null, at, { maxTokens: 50, promptTokens: 10, accountId })
    const receipts = Array.from({ length: steps }, (_, i) => i + 1).flatMap((step) =>
      hops.map((h) =>
        sign(h.hostId === hostA.id ? hostA : hostB, { session, step, blocks: h.blocks, tokens: step === 1 ? 10 : 1, position: step === 1 ? 0 : 8 + step }),
      ),
    )
    expect(metering.settle(session, receipts, at).every((v) => v.ok)).toBe(true)
    return { session, receipts }
  }

  it('keeps earnings pending, not spendable, until the settlement window passes, then settles them exactly', () => {
    const { account } = accounts.create({ name: 'alice' })
    const { receipts } = serve(account.accountId, 3, T0)
    const earnedA = receipts.filter((r) => r.hostId === hostA.id).reduce((s, r) => s + earned(r), 0)
    const earnedB = receipts.filter((r) => r.hostId === hostB.id).reduce((s, r) => s + earned(r), 0)
    expect([settled(hostA), pending(hostA), settled(hostB), pending(hostB)]).toEqual([0, earnedA, 0, earnedB])
    expect(
      ledger()
        .receipts({ hostId: hostA.id })
        .map((r) => r.escrow),
    ).toEqual(['pending', 'pending', 'pending'])
    // A minute short of the window: nothing moves.
    expect(escrow.release(T0 + WINDOW - 60_000)).toEqual({ releasedMicro: 0, receipts: 0, hosts: 0 })
    expect(settled(hostA)).toBe(0)
    const entries = ledger().entryCount()
    expect(escrow.release(T0 + WINDOW)).toEqual({ releasedMicro: earnedA + earnedB, receipts: 6, hosts: 2 })
    expect([settled(hostA), pending(hostA), settled(hostB), pending(hostB)]).toEqual([earnedA, 0, earnedB, 0])
    // One transaction of two legs per host.
    expect(ledger().entryCount() - entries).toBe(4)
    expect(
      ledger()
        .receipts({ hostId: hostA.id })
        .map((r) => r.escrow),
    ).toEqual(['released', 'released', 'released'])
    expect(escrow.release(T0 + 2 * WINDOW)).toEqual({ releasedMicro: 0, receipts: 0, hosts: 0 })
    expect(settled(hostA)).toBe(earnedA)
    sound()
  })

  it('tells each settled receipt’s settled and pending balances, and pays at once with a window of 0', () => {
    const { account } = accounts.create()
    const { session } = serve(account.accountId, 1, T0)
    const [v] = metering.settle(session, [sign(hostA, { session, step: 2, blocks: [0, 3], tokens: 1, position: 10 })], T0)
    expect(v?.balances).toEqual({ host: 0, pending: pending(hostA), account: accounts.balance(account.accountId) })
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
    atOnce.issue(s, 'toy', [{ hostId: hostC.id, blocks: [0, 4] }], null, T0, { maxTokens: 50, promptTokens: 10, accountId: account.accountId })
    expect(atOnce.settle(s, [sign(hostC, { session: s, step: 1, blocks: [0, 4], tokens: 10 })], T0)[0]?.ok).toBe(true)
    atOnce.close()
    expect([settled(hostC), pending(hostC)]).toEqual([560 - 56, 0])
    expect(ledger().receipts({ hostId: hostC.id })[0]?.escrow).toBe('released')
    sound()
  })

  it('voids a host’s pending earnings: each payer gets back exactly what it paid, and voiding twice refunds once', () => {
    const alice = accounts.create({ name: 'alice' }).account.accountId
    const bob = accounts.create({ name: 'bob' }).account.accountId
    const a = serve(alice, 3, T0)
    const b = serve(bob, 2, T0 + 1000)
    const paidToA = (rs: Receipt[]) => rs.filter((r) => r.hostId === hostA.id).reduce((s, r) => s + hopCharge(PRICE, 4, r), 0)
    const [aliceBefore, bobBefore, feesBefore, pendingB] = [accounts.balance(alice), accounts.balance(bob), ledger().balance(FEE_ACCOUNT), pending(hostB)]
    const voided = escrow.voidHost(hostA.id, 'failed an audit', T0 + 2000)
    expect(voided).toEqual({
      voidedMicro: [...a.receipts, ...b.receipts].filter((r) => r.hostId === hostA.id).reduce((s, r) => s + earned(r), 0),
      refundedMicro: paidToA(a.receipts) + paidToA(b.receipts),
      receipts: 5,
    })
    expect(accounts.balance(alice)).toBe(aliceBefore + paidToA(a.receipts))
    expect(accounts.balance(bob)).toBe(bobBefore + paidToA(b.receipts))
    expect([pending(hostA), settled(hostA), pending(hostB)]).toEqual([0, 0, pendingB])
    expect(ledger().balance(FEE_ACCOUNT)).toBe(
      feesBefore - [...a.receipts, ...b.receipts].filter((r) => r.hostId === hostA.id).reduce((s, r) => s + feeOf(hopCharge(PRICE, 4, r), 1000), 0),
    )
    expect(
      ledger()
        .receipts({ hostId: hostA.id })
        .every((r) => r.escrow === 'voided'),
    ).toBe(true)
    // Voided earnings leave the host's charts.
    expect(ledger().earnings(hostA.id, 'hour', 0)).toEqual([])
    expect(escrow.voidHost(hostA.id, 'failed an audit', T0 + 3000)).toEqual({ voidedMicro: 0, refundedMicro: 0, receipts: 0 })
    expect([accounts.balance(alice), accounts.balance(bob)]).toEqual([aliceBefore + paidToA(a.receipts), bobBefore + paidToA(b.receipts)])
    // B's earnings still settle when their window passes.
    escrow.release(T0 + WINDOW + 1000)
    expect([settled(hostB), pending(hostB), settled(hostA)]).toEqual([pendingB, 0, 0])
    sound()
  })

  it('never voids earnings already released: only what is still pending goes back', () => {
    const alice = accounts.create().account.accountId
    serve(alice, 2, T0)
    escrow.release(T0 + WINDOW)
    const settledA = settled(hostA)
    const late = serve(alice, 1, T0 + WINDOW + 5)
    const before = accounts.balance(alice)
    const lateCharge = late.receipts.filter((r) => r.hostId === hostA.id).reduce((s, r) => s + hopCharge(PRICE, 4, r), 0)
    expect(escrow.voidHost(hostA.id, 'banned', T0 + WINDOW + 10)).toMatchObject({ refundedMicro: lateCharge, receipts: 1 })
    expect([settled(hostA), pending(hostA), accounts.balance(alice)]).toEqual([settledA, 0, before + lateCharge])
    expect(
      ledger()
        .receipts({ hostId: hostA.id })
        .map((r) => r.escrow),
    ).toEqual(['voided', 'released', 'released'])
    sound()
  })

  /** A session on A [0, 3) that A fails after three steps; C replays A's inputs; returns what A had pending. */
  function failOver(accountId: string, at: number): { session: string; earnedA: number; replays: Receipt[] } {
    const session = randomBytes(16).toString('hex')
    const routed = { maxTokens: 20, promptTokens: 10 }
    metering.issue(session, 'toy', [{ hostId: hostA.id, blocks: [0, 3] }], null, at, { ...routed, accountId })
    const served = [1, 2, 3].map((step) => sign(hostA, { session, step, blocks: [0, 3], tokens: step === 1 ? 10 : 1, position: step === 1 ? 0 : 8 + step }))
    expect(metering.settle(session, served, at).every((v) => v.ok)).toBe(true)
    const earnedA = pending(hostA)
    metering.issue(session, 'toy', [{ hostId: hostC.id, blocks: [0, 3] }], null, at, { ...routed, failedHost: hostA.id, span: [0, 3] })
    const replays = [0, 10, 11].map((position, i) =>
      sign(hostC, { session, step: REPLAY_STEP_BASE + i, blocks: [0, 3], tokens: position === 0 ? 10 : 1, position }),
    )
    return { session, earnedA, replays }
  }

  it('pays a replay from the failed host’s pending earnings, escrow to escrow, and voiding the replacement gives them back', () => {
    const alice = accounts.create().account.accountId
    const { session, earnedA, replays } = failOver(alice, T0)
    const paid = accounts.balance(alice)
    expect(metering.settle(session, replays, T0 + 10).every((v) => v.ok && v.charged === 0)).toBe(true)
    expect([pending(hostA), pending(hostC), settled(hostA), settled(hostC), accounts.balance(alice)]).toEqual([0, earnedA, 0, 0, paid])
    // C's replays were paid from A: voiding C refunds no payer and puts them back in A's escrow.
    expect(escrow.voidHost(hostC.id, 'failed a probe', T0 + 20)).toEqual({ voidedMicro: earnedA, refundedMicro: 0, receipts: 3 })
    expect([pending(hostA), pending(hostC), accounts.balance(alice)]).toEqual([earnedA, 0, paid])
    escrow.release(T0 + WINDOW)
    expect([settled(hostA), pending(hostA)]).toEqual([earnedA, 0])
    sound()
  })

  it('voiding the failed host takes its replacement’s replay pay back too, so its payer gets back exactly what it paid', () => {
    const alice = accounts.create().account.accountId
    const before = accounts.balance(alice)
    const { session, earnedA, replays } = failOver(alice, T0)
    const paid = before - accounts.balance(alice)
    metering.settle(session, replays, T0 + 10)
    expect(pending(hostC)).toBe(earnedA)
    expect(escrow.voidHost(hostA.id, 'wrong known answers', T0 + 20)).toEqual({ voidedMicro: earnedA, refundedMicro: paid, receipts: 3 })
    expect(accounts.balance(alice)).toBe(before)
    expect([pending(hostA), pending(hostC), settled(hostA), settled(hostC)]).toEqual([0, 0, 0, 0])
    expect(
      ledger()
        .receipts({ session })
        .every((r) => r.escrow === 'voided'),
    ).toBe(true)
    sound()
  })

  it('pays a replay only from what the failed host still has pending in the session', () => {
    const alice = accounts.create().account.accountId
    const { session, earnedA, replays } = failOver(alice, T0)
    escrow.release(T0 + WINDOW)
    expect(settled(hostA)).toBe(earnedA)
    expect(metering.settle(session, replays, T0 + WINDOW + 10).every((v) => v.ok)).toBe(true)
    expect([settled(hostA), pending(hostC)]).toEqual([earnedA, 0])
    sound()
  })

  it('releases pending earnings on its own timer, and stops when closed', async () => {
    const alice = accounts.create().account.accountId
    const { receipts } = serve(alice, 1, Date.now())
    const quick = new Escrow(store.ledger, 50, { releaseEveryMs: 20 })
    quick.start()
    await vi.waitFor(() => expect(settled(hostA)).toBe(earned(receipts[0] as Receipt)), { timeout: 2000, interval: 20 })
    quick.close()
    sound()
  })

  it('reads the window from the option, else NEURON_SETTLEMENT_WINDOW_MS, else a day, and refuses a bad one', () => {
    expect(settlementWindowMs(0, { NEURON_SETTLEMENT_WINDOW_MS: '5' })).toBe(0)
    expect(settlementWindowMs(undefined, { NEURON_SETTLEMENT_WINDOW_MS: '5000' })).toBe(5000)
    expect(settlementWindowMs(undefined, {})).toBe(DEFAULT_SETTLEMENT_WINDOW_MS)
    expect(DEFAULT_SETTLEMENT_WINDOW_MS).toBe(24 * HOUR)
    expect(() => settlementWindowMs(undefined, { NEURON_SETTLEMENT_WINDOW_MS: '1h' })).toThrow(/whole number of milliseconds/)
    expect(() => settlementWindowMs(-1, {})).toThrow(/NEURON_SETTLEMENT_WINDOW_MS/)
  })
})
