// What the OpenAI-compatible gateway's generations pay, against a real swarm on stories260K: the ledger's
// invariants, the dashboards' pushes, receipts an app forges, and a failover that is not paid twice.
import type OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity, verifySignature } from '../../identity/keys'
import {
  ClientToTracker,
  callRpc,
  DashboardReceipt,
  feeOf,
  REPLAY_STEP_BASE,
  type Receipt,
  receiptMessage,
} from '../../protocol'
import { GATEWAY_ADMIN as ADMIN, gatewayRequest, MESSAGES, startGatewaySuite } from '../../test/gateway-suite'
import { scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { consumerAccount, escrowAccount, FEE_ACCOUNT, hostAccount } from '../ledger/accounts'
import { hopCharge, priceOf } from '../ledger/pricing'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let apiKey = ''
let accountId = ''
let openai: OpenAI

/** A request to the gateway as it travels, with the suite's key unless `init.key` says otherwise (null: none). */
function raw(path: string, init: RequestInit & { key?: string | null } = {}) {
  return gatewayRequest(swarm.tracker.url, apiKey, path, init)
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`the gateway's payments on a real swarm on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir())
      ;({ swarm, apiKey, accountId, openai } = await startGatewaySuite(dir, engine))
    }, 180_000)
    afterAll(async () => {
      await swarm?.close()
      await cleanup()
    })

    it(
      'keeps the ledger sound: entries sum to zero and ' + 'each host’s earnings equal what its receipts prove',
      async () => {
        for (let i = 0; i < 3; i++)
          await openai.chat.completions.create({
            model: swarm.manifest.modelId,
            messages: MESSAGES,
            max_tokens: 12,
            seed: i,
          })
        const ledger = swarm.tracker.store.ledger
        expect(await ledger.total()).toBe(0)
        expect(await ledger.unbalancedTransactions()).toEqual([])
        expect(await ledger.driftedBalances()).toEqual([])
        const price = priceOf(swarm.manifest, {})
        let [fees, rent] = [0, 0]
        for (const host of swarm.hosts) {
          const receipts = await ledger.receipts({ hostId: host.hostId, limit: 100_000 })
          expect(receipts.length).toBeGreaterThan(0)
          let proven = 0
          for (const { receipt, accountId: payer } of receipts) {
            const { signature, ...body } = receipt
            expect(
              verifySignature(
                swarm.tracker.registry.get(host.hostId)?.publicKey ?? '',
                receiptMessage(body),
                signature,
              ),
            ).toBe(true)
            if (payer === null || receipt.step >= REPLAY_STEP_BASE) continue
            const charge = hopCharge(price, swarm.manifest.nLayer, receipt)
            proven += charge - feeOf(charge, 1000)
            fees += feeOf(charge, 1000)
          }
          // Pending in escrow for the settlement window (a day by default), not yet settled.
          expect(await ledger.balance(escrowAccount(host.hostId))).toBe(proven)
          // settled: rent, paid at each session's end (ledger/rent.ts)
          rent += await ledger.balance(hostAccount(host.hostId))
        }
        // the swarm's fees: the receipts', and a share of the rent
        expect(rent).toBeGreaterThanOrEqual(0)
        expect((await ledger.balance(FEE_ACCOUNT)) - fees).toSatisfy((extra: number) => extra >= 0 && extra <= rent)
        const dashboard = await raw('/v1/dashboard/account')
        expect(dashboard.body).toMatchObject({
          account_id: accountId,
          balance_micro: await ledger.balance(consumerAccount(accountId)),
        })
      },
    )

    it('pushes settled receipts to a subscribed dashboard and answers the host dashboard over HTTP', async () => {
      const host = swarm.hosts[0] as (typeof swarm.hosts)[number]
      const socket = await connectTracker(swarm.tracker.url, '/clients', NodeIdentity.generate())
      try {
        const pushes: DashboardReceipt[] = []
        socket.on('dashboard.receipt', (p: unknown) => pushes.push(DashboardReceipt.parse(p)))
        expect(await callRpc(socket, ClientToTracker, 'dashboard.subscribe', { hostIds: [host.hostId] })).toEqual({
          hostIds: [host.hostId],
        })
        await openai.completions.create({
          model: swarm.manifest.modelId,
          prompt: 'Once upon a time',
          max_tokens: 6,
          temperature: 0,
        })
        // the host hands its receipts in too (batched): wait for every step's push
        const { ledger } = swarm.tracker.store
        const paid = async () =>
          (await ledger.receipts({ hostId: host.hostId, limit: 1000 })).filter((r) => r.accountId === accountId)
        const pushedOf = (sessions: Set<string>) => pushes.filter((p) => sessions.has(p.session))
        await vi.waitFor(async () => {
          expect(pushedOf(new Set((await paid()).map((r) => r.receipt.session))).length).toBeGreaterThanOrEqual(6)
          expect(pushes.at(-1)?.hostPendingMicro).toBe(await ledger.balance(escrowAccount(host.hostId)))
        }, 10_000)
        // Earnings wait in escrow: the settled balance each push tells has not moved; every push is this host's.
        const settledNow = await ledger.balance(hostAccount(host.hostId))
        expect(pushes.every((p) => p.hostBalanceMicro === settledNow && p.hostId === host.hostId)).toBe(true)
        // This completion's steps are paid by this caller; unpaid
        // sessions (audit re-runs) push 0; earlier tests' may push too
        const ours = new Set((await paid()).map((r) => r.receipt.session))
        expect(pushedOf(ours).length).toBeGreaterThanOrEqual(6)
        expect(pushes.filter((p) => ours.has(p.session) && !(p.ok && p.chargedMicro > 0))).toEqual([])
        const payer = new Map(
          (await ledger.receipts({ hostId: host.hostId, limit: 1000 })).map((r) => [r.receipt.session, r.accountId]),
        )
        expect(pushes.filter((p) => payer.get(p.session) == null && p.chargedMicro !== 0)).toEqual([])
      } finally {
        socket.close()
      }
      const res = await fetch(`${swarm.tracker.url}/v1/dashboard/hosts/${host.hostId}`)
      const board = (await res.json()) as Record<string, unknown>
      expect(res.status).toBe(200)
      expect(board).toMatchObject({
        host_id: host.hostId,
        balance_micro: await swarm.tracker.store.ledger.balance(hostAccount(host.hostId)),
        pending_micro: await swarm.tracker.store.ledger.balance(escrowAccount(host.hostId)),
        settlement_window_ms: 24 * 3_600_000,
        served_block_tokens: expect.any(Number),
        earnings_by_hour: [expect.objectContaining({ modelId: swarm.manifest.modelId })],
        reputation: expect.objectContaining({ score: expect.any(Number), components: expect.any(Object) }),
      })
      expect(board.served_block_tokens).toBeGreaterThan(0)
      expect((board.recent_receipts as unknown[]).length).toBeGreaterThan(0)
    })

    it(
      'refuses forged and mismatched receipts handed in by an app, lists them on the host’s dashboard without ' +
        'holding them against it, and pays a replayed one nothing',
      async () => {
        const app = NodeIdentity.generate()
        await createAccount(swarm.tracker.url, ADMIN, { public_key: app.publicKey })
        const client = await SwarmClient.connect(swarm.tracker.url, app)
        try {
          const runs = []
          for (const seed of [1, 2]) {
            const run = client.generate({
              modelId: swarm.manifest.modelId,
              prompt: 'Once upon a time',
              maxTokens: 4,
              sampling: { seed },
            })
            let next = await run.next()
            while (!next.done) next = await run.next()
            runs.push(next.value)
          }
          const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]]
          const submit = (session: string, receipts: unknown[]) =>
            callRpc(client.tracker, ClientToTracker, 'receipts.submit', { session, receipts })
          const first = await client.submitReceipts(a.session, a.receipts)
          // The hosts hand in their own receipts too: whichever copy comes first pays.
          expect(first.verdicts.every((v) => (v.ok && v.charged > 0) || v.code === 'already_settled')).toBe(true)
          expect(await swarm.tracker.store.ledger.receipts({ session: a.session })).toHaveLength(a.receipts.length)
          const replayed = await submit(a.session, [...a.receipts])
          expect(replayed.verdicts.map((v) => [v.code, v.charged])).toEqual(
            a.receipts.map(() => ['already_settled', 0]),
          )
          const victim = b.receipts[0] as Receipt
          const forged = await submit(b.session, [{ ...victim, tokens: victim.tokens + 100 }])
          expect(forged.verdicts[0]?.code).toBe('bad_signature')
          const mismatched = await submit(b.session, [a.receipts[1]])
          expect(mismatched.verdicts[0]?.code).toBe('route_mismatch')
          const ledger = swarm.tracker.store.ledger
          const codes = (await ledger.rejections(victim.hostId)).map((r) => r.code)
          expect(codes).toContain('bad_signature')
          // The app forged them, not the host: anyone could hand in
          // such receipts naming any host, so they cost it nothing.
          expect(swarm.tracker.reputation.of(victim.hostId).failedSteps).toBe(0)
          const span = swarm.tracker.planner
            .view(swarm.manifest.modelId)
            .spans.find((sp) => sp.hostId === victim.hostId)
          expect(span?.reputation).toBe(swarm.tracker.reputation.score(victim.hostId))
          expect(await ledger.total()).toBe(0)
        } finally {
          client.close()
        }
      },
    )

    it(
      'pays a step retried after a failover once, and the replay that rebuilt the cache from the failed host’s ' +
        'share, not the caller’s; the failure counts against no host on the client’s word',
      async () => {
        const spare = await swarm.addHost([2, 4])
        const failedBefore = new Map(
          swarm.hosts.map((h) => [h.hostId, swarm.tracker.reputation.of(h.hostId).failedSteps]),
        )
        const stream = await openai.completions.create({
          model: swarm.manifest.modelId,
          prompt: 'Once upon a time',
          max_tokens: 40,
          temperature: 0,
          stream: true,
        })
        let chunks = 0
        let killed = ''
        for await (const _ of stream) {
          // the first chunk: text comes in batches 200 ms apart, and this short stream may need only two or three
          if (++chunks !== 1) continue
          const victim = swarm.hosts.find((h) => h !== spare && h.state.blocks?.[0] === 2) ?? spare
          // the one of the two that holds this stream's session (the receipts may not be committed yet)
          const onRoute = victim.activeSessions > 0 ? victim : spare
          killed = onRoute.hostId
          await onRoute.stop(0)
        }
        expect(killed).not.toBe('')
        const ledger = swarm.tracker.store.ledger
        const replays = (await ledger.receipts({ limit: 100_000 })).filter((r) => r.receipt.step >= REPLAY_STEP_BASE)
        expect(replays.length).toBeGreaterThan(0)
        const session = replays[0]?.receipt.session ?? ''
        const paid = (await ledger.receipts({ session, limit: 100_000 })).filter(
          (r) => r.receipt.step < REPLAY_STEP_BASE,
        )
        const replayEarned = replays.reduce((s, r) => s + r.hostEarned, 0)
        const killedEarned = paid.filter((r) => r.receipt.hostId === killed).reduce((s, r) => s + r.hostEarned, 0)
        expect(replayEarned).toBeGreaterThan(0)
        expect(replayEarned).toBeLessThanOrEqual(killedEarned)
        const blocksPerStep = new Map<number, number>()
        for (const r of paid)
          blocksPerStep.set(
            r.receipt.step,
            (blocksPerStep.get(r.receipt.step) ?? 0) + r.receipt.blocks[1] - r.receipt.blocks[0],
          )
        expect([...blocksPerStep.values()].every((n) => n === swarm.manifest.nLayer)).toBe(true)
        expect(await ledger.total()).toBe(0)
        // A client's word that a hop failed counts against no host
        // (a probe is asked for instead; test/admission-attacks)
        for (const h of swarm.hosts) {
          const more = swarm.tracker.reputation.of(h.hostId).failedSteps - (failedBefore.get(h.hostId) ?? 0)
          expect(more, h.hostId).toBe(0)
        }
      },
    )
  })
