import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { z } from 'zod'
import { renderChat } from '../../client/chat-template'
import type { SwarmClient } from '../../client/swarm-client'
import type { ModelTokenizer } from '../../client/tokenizer'
import type { Receipt } from '../../protocol'
import type { ModelCatalog } from '../catalog'
import type { Accounts } from '../ledger/accounts'
import { hostAccount } from '../ledger/accounts'
import type { LedgerStore, StoredAccount } from '../ledger/ledger-store'
import type { Metering } from '../ledger/metering'
import { affordableTokens, maxCost, type PricingOptions, priceOf } from '../ledger/pricing'
import type { Reputation } from '../reputation/reputation'
import { badRequest, fromNeuronError, GatewayError, sendError, sendJson } from './errors'
import { ChatCompletionRequest, CompletionRequest, CreateAccountRequest, GrantRequest } from './openai-schemas'

export interface GatewayOptions {
  /** Guards the /admin routes (`Authorization: Bearer <token>`); absent, they answer 403. */
  readonly adminToken?: string
  readonly pricing?: PricingOptions
  /** Requests per account per minute before 429 (default 120). */
  readonly requestsPerMinute?: number
  /** Default max_tokens of a chat completion without one. */
  readonly defaultChatMaxTokens?: number
}

export interface GatewayDeps {
  readonly catalog: ModelCatalog
  readonly accounts: Accounts
  readonly ledger: LedgerStore
  readonly metering: Metering
  readonly reputation: Reputation
  /** The tracker's own client of its swarm, connected on first use. */
  readonly client: () => Promise<SwarmClient>
  readonly log: (line: string) => void
}

interface Generation {
  readonly modelId: string
  readonly promptTokens: number[]
  readonly maxTokens: number
  readonly temperature: number
  readonly topP: number | undefined
  readonly seed: number
  readonly stop: readonly string[]
}

type Chunk = { readonly text: string } | { readonly done: true; readonly finishReason: 'stop' | 'length'; readonly completionTokens: number }

const MAX_BODY_BYTES = 4 * 1024 * 1024

/**
 * The OpenAI-compatible front door on the tracker's HTTP port: /v1/models, /v1/chat/completions,
 * /v1/completions (streamed as SSE or not), account administration and dashboard queries. Every
 * generation runs on the swarm through the tracker's own SwarmClient and is paid from the
 * caller's account by the hops' signed receipts, as they arrive.
 */
export class Gateway {
  /** Micro-credits set aside for generations in flight, per account: they cannot be spent twice. */
  private readonly holds = new Map<string, Set<{ remaining: number }>>()
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(
    private readonly deps: GatewayDeps,
    private readonly options: GatewayOptions,
  ) {}

  /** Serves the request when its path is the gateway's; false when it is someone else's. */
  handles(path: string): boolean {
    return path.startsWith('/v1/') || path.startsWith('/admin/')
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      const method = req.method ?? 'GET'
      if (method === 'GET' && path === '/v1/models') return this.models(res, this.authenticate(req))
      if (method === 'POST' && path === '/v1/chat/completions') return await this.chat(req, res)
      if (method === 'POST' && path === '/v1/completions') return await this.completion(req, res)
      if (method === 'GET' && path === '/v1/dashboard/account') return this.accountDashboard(res, this.authenticate(req))
      const host = /^\/v1\/dashboard\/hosts\/([0-9a-f]{20})$/.exec(path)
      if (method === 'GET' && host !== null) return this.hostDashboard(res, host[1] as string)
      if (method === 'POST' && path === '/admin/accounts') return await this.createAccount(req, res)
      const grant = /^\/admin\/accounts\/(acct_[0-9a-f]{16})\/grant$/.exec(path)
      if (method === 'POST' && grant !== null) return await this.grant(req, res, grant[1] as string)
      throw new GatewayError(404, 'invalid_request_error', 'unknown_url', `no route ${method} ${path}; see /v1/models, /v1/chat/completions, /v1/completions.`)
    } catch (error) {
      const e = fromNeuronError(error)
      if (e.status >= 500) this.deps.log(`gateway ${req.method} ${path}: ${e.message}`)
      if (res.headersSent) res.end()
      else sendError(res, e)
    }
  }

  private models(res: ServerResponse, _account: StoredAccount): void {
    const data = this.deps.catalog.summaries().map((m) => {
      const stored = this.deps.catalog.get(m.modelId)
      const price = priceOf(stored.manifest, this.options.pricing ?? {})
      return {
        id: m.modelId,
        object: 'model',
        created: Math.floor(stored.publishedAt / 1000),
        owned_by: stored.publishedBy,
        // Neuron's extension: what a token costs, micro-credits.
        pricing: { prompt_micro_per_token: price.promptMicroPerToken, completion_micro_per_token: price.completionMicroPerToken },
        coverage: m.coverage,
      }
    })
    sendJson(res, 200, { object: 'list', data })
  }

  private async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = this.authenticate(req)
    this.rateLimit(account)
    const body = parse(ChatCompletionRequest, await readBody(req))
    const tokenizer = await this.tokenizer(body.model)
    const messages = body.messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('') }))
    const promptTokens = renderChat(tokenizer, messages)
    const generation = this.generation(body, promptTokens, body.max_completion_tokens ?? body.max_tokens ?? this.options.defaultChatMaxTokens ?? 256)
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`
    const created = Math.floor(Date.now() / 1000)
    const base = { id, created, model: body.model, system_fingerprint: null }
    const stream = this.run(account, generation, abortOnClose(res))
    if (body.stream === true) {
      const first = await stream.next()
      startSse(res)
      sse(res, {
        ...base,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      })
      await streamSse(res, first, stream, {
        text: (text) => ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }] }),
        finish: (reason) => ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: reason }] }),
        usage:
          body.stream_options?.include_usage === true
            ? (n) => ({ ...base, object: 'chat.completion.chunk', choices: [], usage: usage(promptTokens.length, n) })
            : undefined,
      })
      return
    }
    const { text, finishReason, completionTokens } = await collect(stream)
    sendJson(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: finishReason }],
      usage: usage(promptTokens.length, completionTokens),
    })
  }

  private async completion(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = this.authenticate(req)
    this.rateLimit(account)
    const body = parse(CompletionRequest, await readBody(req))
    const tokenizer = await this.tokenizer(body.model)
    const prompt = body.prompt
    const promptTokens =
      typeof prompt === 'string' ? tokenizer.encode(prompt) : typeof prompt[0] === 'string' ? tokenizer.encode(prompt[0]) : (prompt as number[])
    // OpenAI's legacy default is 16 tokens.
    const generation = this.generation(body, promptTokens, body.max_tokens ?? 16)
    const id = `cmpl-${randomBytes(12).toString('hex')}`
    const base = { id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null }
    const stream = this.run(account, generation, abortOnClose(res))
    if (body.stream === true) {
      const first = await stream.next()
      startSse(res)
      await streamSse(res, first, stream, {
        text: (text) => ({ ...base, choices: [{ index: 0, text, logprobs: null, finish_reason: null }] }),
        finish: (reason) => ({ ...base, choices: [{ index: 0, text: '', logprobs: null, finish_reason: reason }] }),
        usage: body.stream_options?.include_usage === true ? (n) => ({ ...base, choices: [], usage: usage(promptTokens.length, n) }) : undefined,
      })
      return
    }
    const { text, finishReason, completionTokens } = await collect(stream)
    sendJson(res, 200, {
      ...base,
      choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
      usage: usage(promptTokens.length, completionTokens),
    })
  }

  private generation(
    body: { model: string; temperature?: number | null; top_p?: number | null; seed?: number | null; stop?: string | string[] | null },
    promptTokens: number[],
    maxTokens: number,
  ): Generation {
    if (promptTokens.length === 0) throw new GatewayError(400, 'invalid_request_error', 'invalid_value', 'the prompt is empty.', 'prompt')
    const stop = body.stop == null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter((s) => s !== '')
    return {
      modelId: body.model,
      promptTokens,
      maxTokens,
      temperature: body.temperature ?? 1,
      topP: body.top_p ?? undefined,
      seed: body.seed == null ? randomBytes(4).readUInt32LE() : body.seed >>> 0,
      stop,
    }
  }

  /**
   * Runs one generation on the swarm for `account`: refuses (402) when its credits cannot cover the
   * prompt and one token, caps max_tokens at what they cover (finish 'length' there), settles every
   * step's receipts before its text is yielded, trims at stop strings.
   */
  private async *run(account: StoredAccount, g: Generation, signal: AbortSignal): AsyncGenerator<Chunk, void> {
    const stored = this.deps.catalog.get(g.modelId)
    const { nLayer } = stored.manifest
    const price = priceOf(stored.manifest, this.options.pricing ?? {})
    const available = this.deps.accounts.balance(account.accountId) - this.heldMicro(account.accountId)
    const affordable = affordableTokens(price, nLayer, g.promptTokens.length, available)
    if (affordable < 1) {
      throw new GatewayError(
        402,
        'insufficient_quota',
        'insufficient_credits',
        `account ${account.accountId} has ${available} micro-credits available; this prompt of ${g.promptTokens.length} tokens and one completion token cost ${maxCost(price, nLayer, g.promptTokens.length, 1)}. Ask the operator for a grant.`,
      )
    }
    const maxTokens = Math.min(g.maxTokens, affordable)
    const hold = { remaining: maxCost(price, nLayer, g.promptTokens.length, maxTokens) }
    const holds = this.holds.get(account.accountId) ?? new Set()
    holds.add(hold)
    this.holds.set(account.accountId, holds)
    const client = await this.deps.client()
    let outOfCredits = false
    // Receipts wait here until the gateway has sent the next step on its way: committing them then
    // overlaps the hosts' compute. A step's text is written only after its receipts are committed.
    const unsettled: { session: string; receipts: readonly Receipt[] }[] = []
    const settle = () => {
      for (let batch = unsettled.shift(); batch !== undefined; batch = unsettled.shift()) {
        this.deps.metering.bind(batch.session, account.accountId)
        for (const v of this.deps.metering.settle(batch.session, batch.receipts)) {
          hold.remaining -= v.charged
          if (v.code === 'insufficient_credits') outOfCredits = true
        }
      }
    }
    try {
      const tokens = client.generate({
        modelId: g.modelId,
        prompt: g.promptTokens,
        maxTokens,
        sampling: { temperature: g.temperature, seed: g.seed, ...(g.topP === undefined ? {} : { topP: g.topP }) },
        signal,
        onReceipts: (session, receipts) => {
          unsettled.push({ session, receipts })
        },
      })
      const longestStop = Math.max(0, ...g.stop.map((s) => s.length))
      let text = ''
      let sent = 0
      let next = await tokens.next()
      while (!next.done) {
        const generated = countGenerated(next.value.position, g.promptTokens.length)
        text += next.value.text
        const at = firstStop(text, g.stop)
        if (at !== -1) {
          settle()
          if (at > sent) yield { text: text.slice(sent, at) }
          await tokens.return(undefined as never)
          settle()
          yield { done: true, finishReason: 'stop', completionTokens: generated }
          return
        }
        const following = tokens.next()
        following.catch(() => {}) // awaited below; this only keeps it from counting as unhandled meanwhile
        settle()
        if (outOfCredits) {
          await following.catch(() => undefined)
          await tokens.return(undefined as never)
          settle()
          if (text.length > sent) yield { text: text.slice(sent) }
          yield { done: true, finishReason: 'length', completionTokens: generated }
          return
        }
        // Hold back what might be the start of a stop string.
        const safe = Math.max(sent, text.length - Math.max(0, longestStop - 1))
        if (safe > sent) {
          yield { text: text.slice(sent, safe) }
          sent = safe
        }
        next = await following
      }
      settle()
      if (text.length > sent) yield { text: text.slice(sent) }
      const s = next.value
      for (const hop of s.route) if (hop.medianMs > 0) this.deps.reputation.observedLatency(hop.hostId, hop.blocks[1] - hop.blocks[0], hop.medianMs)
      yield { done: true, finishReason: s.finishReason, completionTokens: s.completionTokens }
    } finally {
      holds.delete(hold)
      if (holds.size === 0) this.holds.delete(account.accountId)
    }
  }

  /** Micro-credits the account's generations in flight have set aside and not yet spent. */
  private heldMicro(accountId: string): number {
    let held = 0
    for (const h of this.holds.get(accountId) ?? []) held += h.remaining
    return held
  }

  private async tokenizer(modelId: string): Promise<ModelTokenizer> {
    this.deps.catalog.get(modelId) // 404 before any work
    return (await this.deps.client()).tokenizer(modelId)
  }

  private authenticate(req: IncomingMessage): StoredAccount {
    const key = bearer(req)
    if (key === undefined) {
      throw new GatewayError(
        401,
        'invalid_request_error',
        'missing_api_key',
        'no API key: send Authorization: Bearer nk-… (ask the tracker operator for an account).',
      )
    }
    const account = this.deps.accounts.byApiKey(key)
    if (account === undefined)
      throw new GatewayError(401, 'invalid_request_error', 'invalid_api_key', `API key ${key.slice(0, 6)}… is not known to this tracker.`)
    return account
  }

  private rateLimit(account: StoredAccount): void {
    const limit = this.options.requestsPerMinute ?? 120
    const now = Date.now()
    const w = this.windows.get(account.accountId)
    if (w === undefined || now - w.start >= 60_000) {
      this.windows.set(account.accountId, { start: now, count: 1 })
      return
    }
    w.count++
    if (w.count > limit) {
      throw new GatewayError(
        429,
        'rate_limit_exceeded',
        'rate_limit_exceeded',
        `account ${account.accountId} sent more than ${limit} requests this minute; retry in ${Math.ceil((w.start + 60_000 - now) / 1000)} s.`,
      )
    }
  }

  private requireAdmin(req: IncomingMessage): void {
    const token = this.options.adminToken
    if (token === undefined)
      throw new GatewayError(403, 'invalid_request_error', 'admin_disabled', 'this tracker has no admin token (NEURON_ADMIN_TOKEN); admin routes are off.')
    const given = bearer(req) ?? ''
    const a = Buffer.from(given)
    const b = Buffer.from(token)
    if (a.length !== b.length || !timingSafeEqual(a, b))
      throw new GatewayError(401, 'invalid_request_error', 'invalid_admin_token', 'wrong or missing admin token.')
  }

  private async createAccount(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requireAdmin(req)
    const body = parse(CreateAccountRequest, await readBody(req))
    const created = this.deps.accounts.create({
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.grant_micro === undefined ? {} : { grantMicro: body.grant_micro }),
      ...(body.public_key === undefined ? {} : { publicKey: body.public_key }),
    })
    sendJson(res, 201, {
      account_id: created.account.accountId,
      name: created.account.name,
      api_key: created.apiKey,
      grant_micro: created.grantMicro,
      balance_micro: this.deps.accounts.balance(created.account.accountId),
    })
  }

  private async grant(req: IncomingMessage, res: ServerResponse, accountId: string): Promise<void> {
    this.requireAdmin(req)
    const body = parse(GrantRequest, await readBody(req))
    this.deps.accounts.grant(accountId, body.micro)
    sendJson(res, 200, { account_id: accountId, balance_micro: this.deps.accounts.balance(accountId) })
  }

  private accountDashboard(res: ServerResponse, account: StoredAccount): void {
    sendJson(res, 200, {
      account_id: account.accountId,
      name: account.name,
      balance_micro: this.deps.accounts.balance(account.accountId),
      held_micro: this.heldMicro(account.accountId),
    })
  }

  private hostDashboard(res: ServerResponse, hostId: string): void {
    const now = Date.now()
    const { ledger, reputation } = this.deps
    sendJson(res, 200, {
      host_id: hostId,
      balance_micro: ledger.balance(hostAccount(hostId)),
      served_block_tokens: ledger.servedBlockTokens(hostId),
      earnings_by_hour: ledger.earnings(hostId, 'hour', now - 48 * 3_600_000),
      earnings_by_day: ledger.earnings(hostId, 'day', now - 30 * 86_400_000),
      recent_receipts: ledger.receipts({ hostId, limit: 20 }),
      rejected_receipts: ledger.rejections(hostId, 20),
      reputation: reputation.of(hostId),
      reputation_history: reputation.history(hostId, 50),
    })
  }
}

/** Aborted when the caller hangs up before the response is finished: the swarm stops at the next step. */
function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  return controller.signal
}

function usage(prompt: number, completion: number) {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** SwarmClient's `position` after a token is the prompt plus the tokens before it. */
function countGenerated(position: number, promptTokens: number): number {
  return position - promptTokens + 1
}

function firstStop(text: string, stops: readonly string[]): number {
  let at = -1
  for (const s of stops) {
    const i = text.indexOf(s)
    if (i !== -1 && (at === -1 || i < at)) at = i
  }
  return at
}

async function collect(stream: AsyncGenerator<Chunk, void>): Promise<{ text: string; finishReason: 'stop' | 'length'; completionTokens: number }> {
  let text = ''
  for await (const c of stream) {
    if ('done' in c) return { text, finishReason: c.finishReason, completionTokens: c.completionTokens }
    text += c.text
  }
  throw new GatewayError(500, 'server_error', 'internal', 'the generation ended without a finish reason')
}

/** Streams a generation as SSE chunks in OpenAI's order: text deltas, the finish chunk, usage, [DONE]. */
async function streamSse(
  res: ServerResponse,
  first: IteratorResult<Chunk, void>,
  stream: AsyncGenerator<Chunk, void>,
  chunk: { text: (text: string) => unknown; finish: (reason: 'stop' | 'length') => unknown; usage: ((completionTokens: number) => unknown) | undefined },
): Promise<void> {
  for (let next = first; !next.done; next = await stream.next()) {
    const c = next.value
    if ('done' in c) {
      sse(res, chunk.finish(c.finishReason))
      if (chunk.usage !== undefined) sse(res, chunk.usage(c.completionTokens))
    } else if (c.text !== '') sse(res, chunk.text(c.text))
  }
  res.end('data: [DONE]\n\n')
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
}

function sse(res: ServerResponse, body: unknown): void {
  res.write(`data: ${JSON.stringify(body)}\n\n`)
}

function bearer(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
  return m?.[1]
}

function parse<T extends z.ZodType>(schema: T, raw: unknown): z.output<T> {
  const parsed = schema.safeParse(raw)
  if (!parsed.success) throw badRequest(parsed.error)
  return parsed.data
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY_BYTES) throw new GatewayError(400, 'invalid_request_error', 'body_too_large', `request bodies are at most ${MAX_BODY_BYTES} bytes.`)
    chunks.push(chunk as Buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new GatewayError(400, 'invalid_request_error', 'invalid_json', 'the request body is not JSON.')
  }
}
