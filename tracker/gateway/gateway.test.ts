// The OpenAI-compatible gateway driven by the official `openai` client against a real swarm on
// stories260K: text equal to the swarm client's for the same seed, usage, every error status,
// the ledger's invariants and a failover that is not paid twice.
import OpenAI from 'openai'
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
import { STORIES_260K, scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm, startSwarm } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { renderChat } from '../../text/chat-template'
import { consumerAccount, escrowAccount, FEE_ACCOUNT, hostAccount } from '../ledger/accounts'
import { hopCharge, priceOf } from '../ledger/pricing'

const ADMIN = 'admin-token-for-tests'
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let apiKey = ''
let accountId = ''
let openai: OpenAI
let direct: SwarmClient
const MESSAGES = [
  { role: 'system' as const, content: 'You tell short stories.' },
  { role: 'user' as const, content: 'Once upon a time' },
]

async function directText(prompt: readonly number[], maxTokens: number, temperature: number, seed: number) {
  let text = ''
  const run = direct.generate({ modelId: swarm.manifest.modelId, prompt, maxTokens, sampling: { temperature, seed } })
  let next = await run.next()
  while (!next.done) {
    text += next.value.text
    next = await run.next()
  }
  return { text, summary: next.value }
}

async function raw(path: string, init: RequestInit & { key?: string | null } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const key = init.key === undefined ? apiKey : init.key
  if (key !== null) headers.authorization = `Bearer ${key}`
  const res = await fetch(`${swarm.tracker.url}${path}`, { ...init, headers })
  return {
    status: res.status,
    body: (await res.json()) as { error: { message: string; type: string; param: string | null; code: string | null } },
  }
}

function expectOpenAiError(body: unknown, code: string, param: string | null = null) {
  expect(body).toMatchObject({ error: { message: expect.any(String), type: expect.any(String), code, param } })
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`OpenAI-compatible gateway on a real swarm on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir())
      swarm = await startSwarm(
        dir,
        STORIES_260K,
        [
          [0, 2],
          [2, 4],
          [4, 5],
        ],
        { gateway: { adminToken: ADMIN, requestsPerMinute: 40 }, dbPath: (await engine.fresh()).location },
      )
      ;({ apiKey, accountId } = await createAccount(swarm.tracker.url, ADMIN, { name: 'tests' }))
      openai = new OpenAI({ apiKey, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 })
      direct = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    }, 180_000)
    afterAll(async () => {
      direct?.close()
      await swarm?.close()
      await cleanup()
    })

    it('lists the model', async () => {
      const models = await openai.models.list()
      expect(models.data.map((m) => m.id)).toEqual([swarm.manifest.modelId])
    })

    it(
      'streams a chat completion whose text equals the swarm client’s for the same seed, with usage from the ' +
        'tokenizer',
      async () => {
        const stream = await openai.chat.completions.create({
          model: swarm.manifest.modelId,
          messages: MESSAGES,
          max_tokens: 24,
          temperature: 0.8,
          seed: 7,
          stream: true,
          stream_options: { include_usage: true },
        })
        let text = ''
        let finish: string | null = null
        let usage: OpenAI.CompletionUsage | undefined
        let chunks = 0
        for await (const chunk of stream) {
          chunks++
          expect(chunk.object).toBe('chat.completion.chunk')
          text += chunk.choices[0]?.delta.content ?? ''
          finish = chunk.choices[0]?.finish_reason ?? finish
          usage = chunk.usage ?? usage
        }
        const prompt = renderChat(await direct.tokenizer(swarm.manifest.modelId), MESSAGES)
        const expected = await directText(prompt, 24, 0.8, 7)
        expect(chunks).toBeGreaterThan(2)
        expect(text).toBe(expected.text)
        expect(text.length).toBeGreaterThan(0)
        expect(finish).toBe(expected.summary.finishReason)
        expect(usage).toEqual({
          prompt_tokens: prompt.length,
          completion_tokens: expected.summary.completionTokens,
          total_tokens: prompt.length + expected.summary.completionTokens,
        })
      },
    )

    it('answers a non-streamed completion equal to the swarm client’s, usage counted by the tokenizer', async () => {
      const completion = await openai.completions.create({
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 20,
        temperature: 0,
        seed: 3,
      })
      const tokenizer = await direct.tokenizer(swarm.manifest.modelId)
      const prompt = tokenizer.encode('Once upon a time')
      const expected = await directText(prompt, 20, 0, 3)
      expect(completion.object).toBe('text_completion')
      expect(completion.choices[0]?.text).toBe(expected.text)
      expect(completion.choices[0]?.finish_reason).toBe(expected.summary.finishReason)
      expect(completion.usage).toEqual({
        prompt_tokens: prompt.length,
        completion_tokens: expected.summary.completionTokens,
        total_tokens: prompt.length + expected.summary.completionTokens,
      })
    })

    it('trims the output at a stop string and finishes with stop', async () => {
      const full = await openai.completions.create({
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 30,
        temperature: 0,
        seed: 1,
      })
      const text = full.choices[0]?.text ?? ''
      const stop = text.trim().split(/\s+/)[3] ?? ''
      expect(stop).not.toBe('')
      const cut = await openai.completions.create({
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 30,
        temperature: 0,
        seed: 1,
        stop: [stop],
      })
      expect(cut.choices[0]?.text).toBe(text.slice(0, text.indexOf(stop)))
      expect(cut.choices[0]?.finish_reason).toBe('stop')
    })

    it('answers 400, 401, 402 and 404 in OpenAI’s error shape', async () => {
      const model = swarm.manifest.modelId
      const n2 = await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model, messages: MESSAGES, n: 5 }),
      })
      expect(n2.status).toBe(400)
      expectOpenAiError(n2.body, 'invalid_value', 'n')
      const noMessages = await raw('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model }) })
      expect(noMessages.status).toBe(400)
      expectOpenAiError(noMessages.body, 'invalid_value', 'messages')

      const missing = await raw('/v1/models', { key: null })
      expect(missing.status).toBe(401)
      expectOpenAiError(missing.body, 'missing_api_key')
      const wrong = await raw('/v1/models', { key: 'nk-not-a-key' })
      expect(wrong.status).toBe(401)
      expectOpenAiError(wrong.body, 'invalid_api_key')
      await expect(
        new OpenAI({ apiKey: 'nk-wrong', baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 }).models.list(),
      ).rejects.toMatchObject({ status: 401 })

      const poor = await createAccount(swarm.tracker.url, ADMIN, { grant_micro: 10 })
      const broke = await raw('/v1/completions', {
        method: 'POST',
        key: poor.apiKey,
        body: JSON.stringify({ model, prompt: 'Once upon a time' }),
      })
      expect(broke.status).toBe(402)
      expectOpenAiError(broke.body, 'insufficient_credits')

      const unknown = await raw('/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'no-such-model', prompt: 'hi' }),
      })
      expect(unknown.status).toBe(404)
      expectOpenAiError(unknown.body, 'model_not_found', 'model')
    })

    it('stops a stream cleanly with finish_reason length where the credits run out, never below zero', async () => {
      const price = priceOf(swarm.manifest, {})
      const tokenizer = await direct.tokenizer(swarm.manifest.modelId)
      const prompt = tokenizer.encode('Once upon a time')
      // Enough for the prompt and about five tokens.
      const grant =
        prompt.length * price.promptMicroPerToken + 5 * (price.completionMicroPerToken + swarm.manifest.nLayer) + 1
      const small = await createAccount(swarm.tracker.url, ADMIN, { grant_micro: grant })
      const client = new OpenAI({ apiKey: small.apiKey, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 })
      const stream = await client.completions.create({
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 50,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      })
      let finish: string | null = null
      let usage: OpenAI.CompletionUsage | undefined
      for await (const chunk of stream) {
        finish = chunk.choices[0]?.finish_reason ?? finish
        usage = chunk.usage ?? usage
      }
      expect(finish).toBe('length')
      expect(usage?.completion_tokens).toBe(5)
      const ledger = swarm.tracker.store.ledger
      expect(await ledger.balance(consumerAccount(small.accountId))).toBeGreaterThanOrEqual(0)
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

    it('stops generating, and charging, when the caller hangs up mid-stream', async () => {
      const request = {
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 150,
        temperature: 0.9,
        seed: 5,
      }
      const full = await openai.completions.create(request)
      const n = full.usage?.completion_tokens ?? 0
      expect(n).toBeGreaterThan(30)
      const controller = new AbortController()
      // an account of its own: its receipts are this stream's alone (text is streamed before its receipts commit)
      const caller = await createAccount(swarm.tracker.url, ADMIN, { name: 'hangs up' })
      const res = await fetch(`${swarm.tracker.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${caller.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...request, stream: true }),
        signal: controller.signal,
      })
      const reader = (res.body as ReadableStream<Uint8Array>).getReader()
      await reader.read()
      controller.abort()
      await new Promise((r) => setTimeout(r, 300))
      const steps = async () =>
        new Set(
          (await swarm.tracker.store.ledger.receipts({ limit: 100_000 }))
            .filter((r) => r.accountId === caller.accountId)
            .map((r) => r.receipt.step),
        ).size
      const paid = await steps()
      await new Promise((r) => setTimeout(r, 200))
      expect(await steps()).toBe(paid)
      expect(paid).toBeLessThan(n)
      console.log(`caller hung up: ${paid} of ${n} steps generated and paid`)
    })

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

    it('answers 429 past the rate limit and 503 naming the uncovered blocks', async () => {
      const model = swarm.manifest.modelId
      const last = swarm.hosts.find((h) => h.state.blocks?.[1] === swarm.manifest.nLayer)
      await last?.stop(0)
      await new Promise((r) => setTimeout(r, 200))
      const down = await raw('/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 4 }),
      })
      expect(down.status).toBe(503)
      expectOpenAiError(down.body, 'no_route')
      expect(down.body.error).toMatchObject({ uncovered_blocks: [[4, 5]] })
      let status = 0
      for (let i = 0; i < 45 && status !== 429; i++)
        status = (await raw('/v1/completions', { method: 'POST', body: '{}' })).status
      expect(status).toBe(429)
      const limited = await raw('/v1/completions', { method: 'POST', body: '{}' })
      expectOpenAiError(limited.body, 'rate_limit_exceeded')
    })
  })
