// The OpenAI-compatible gateway driven by the official `openai` client against a real swarm on
// stories260K: text equal to the swarm client's for the same seed, usage, every error status
// (gateway-ledger.test.ts: the ledger's invariants and a failover that is not paid twice).
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'
import { GATEWAY_ADMIN as ADMIN, gatewayRequest, MESSAGES, startGatewaySuite } from '../../test/gateway-suite'
import { scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { renderChat } from '../../text/chat-template'
import { consumerAccount } from '../ledger/accounts'
import { priceOf } from '../ledger/pricing'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let apiKey = ''
let openai: OpenAI
let direct: SwarmClient

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

/** A request to the gateway as it travels, with the suite's key unless `init.key` says otherwise (null: none). */
function raw(path: string, init: RequestInit & { key?: string | null } = {}) {
  return gatewayRequest(swarm.tracker.url, apiKey, path, init)
}

function expectOpenAiError(body: unknown, code: string, param: string | null = null) {
  expect(body).toMatchObject({ error: { message: expect.any(String), type: expect.any(String), code, param } })
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`OpenAI-compatible gateway on a real swarm on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir())
      ;({ swarm, apiKey, openai } = await startGatewaySuite(dir, engine))
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
