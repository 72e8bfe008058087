import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { StoredAccount } from '../ledger/ledger-store'
import { priceOf } from '../ledger/pricing'
import { authenticate } from './auth'
import type { GatewayDeps, GatewayOptions } from './deps'
import { GatewayError } from './errors'
import { collect, type Generation, type PaidGenerations } from './generation'
import { abortOnClose, MAX_BODY_BYTES, parse, readBody, sendJson } from './http'
import { ChatCompletionRequest, CompletionRequest } from './openai-schemas'
import { checkMaxTokens, completionBudget, fewestTokens, fitting, promptBounds, promptTokenLimit } from './prompt-bounds'
import type { PromptTokenizers } from './prompt-tokenizers'
import type { RateLimit } from './rate-limit'
import { sse, startSse, streamSse } from './sse'

/** The sampling fields chat and legacy completions share, as OpenAI names them. */
interface SamplingParams {
  model: string
  temperature?: number | null
  top_p?: number | null
  seed?: number | null
  stop?: string | string[] | null
}

/** OpenAI's /v1/models, /v1/chat/completions and /v1/completions, streamed as SSE or not. */
export class OpenAiEndpoints {
  constructor(
    private readonly deps: Pick<GatewayDeps, 'catalog' | 'accounts' | 'admits'>,
    private readonly options: Pick<GatewayOptions, 'pricing' | 'defaultChatMaxTokens'>,
    private readonly generations: PaidGenerations,
    private readonly rateLimit: RateLimit,
    private readonly tokenizers: PromptTokenizers,
  ) {}

  async models(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await authenticate(req, this.deps)
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

  async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = await authenticate(req, this.deps)
    await this.rateLimit.check(account)
    const body = parse(ChatCompletionRequest, await this.promptBody(req, 'messages'))
    const { contextLength } = this.deps.catalog.get(body.model).manifest // 404 before any work
    const maxParam = body.max_completion_tokens == null ? 'max_tokens' : 'max_completion_tokens'
    const requested = body.max_completion_tokens ?? body.max_tokens
    checkMaxTokens(requested, maxParam, contextLength)
    const tokenizer = await this.tokenizers.get(body.model)
    const messages = body.messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('') }))
    const chars = messages.reduce((n, m) => n + m.content.length, 0)
    const fewest = fewestTokens(chars, promptBounds(tokenizer.longestTokenChars, contextLength), 'messages')
    await this.generations.checkAffordable(account, body.model, fewest)
    const promptTokens = fitting(await tokenizer.chat(messages, promptTokenLimit(contextLength)), contextLength, 'messages')
    const maxTokens = completionBudget(promptTokens.length, requested, this.options.defaultChatMaxTokens ?? 256, contextLength, {
      prompt: 'messages',
      max: maxParam,
    })
    const generation = generationOf('chat.completions', body, promptTokens, maxTokens)
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`
    const created = Math.floor(Date.now() / 1000)
    const base = { id, created, model: body.model, system_fingerprint: null }
    const stream = this.generations.run(account, generation, abortOnClose(res))
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

  async completion(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = await authenticate(req, this.deps)
    await this.rateLimit.check(account)
    const body = parse(CompletionRequest, await this.promptBody(req, 'prompt'))
    const { contextLength, nVocab } = this.deps.catalog.get(body.model).manifest // 404 before any work
    checkMaxTokens(body.max_tokens, 'max_tokens', contextLength)
    const promptTokens = await this.completionPrompt(account, body.model, body.prompt, contextLength, nVocab)
    // OpenAI's legacy default is 16 tokens.
    const maxTokens = completionBudget(promptTokens.length, body.max_tokens, 16, contextLength, { prompt: 'prompt', max: 'max_tokens' })
    const generation = generationOf('completions', body, promptTokens, maxTokens)
    const id = `cmpl-${randomBytes(12).toString('hex')}`
    const base = { id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null }
    const stream = this.generations.run(account, generation, abortOnClose(res))
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

  /** A chat's or completion's body, refused unparsed past the largest that could fit one of the models' contexts. */
  private promptBody(req: IncomingMessage, param: 'messages' | 'prompt'): Promise<unknown> {
    const { bytes, contextLength } = this.tokenizers.largestPromptBody(MAX_BODY_BYTES)
    // Before every model's tokenizer has loaded once, only MAX_BODY_BYTES bounds the body.
    if (contextLength === 0) return readBody(req)
    const tooLong = new GatewayError(
      400,
      'invalid_request_error',
      'context_length_exceeded',
      `This request is longer than ${bytes} bytes: no prompt that long fits the context of a model here (at most ${contextLength} tokens). Please reduce the length of the ${param}.`,
      param,
    )
    return readBody(req, bytes, () => tooLong)
  }

  /** A legacy prompt's token ids: given (each checked against the vocabulary), or its text's, refused before tokenizing when it cannot fit. */
  private async completionPrompt(
    account: StoredAccount,
    modelId: string,
    prompt: CompletionRequest['prompt'],
    contextLength: number,
    nVocab: number,
  ): Promise<number[]> {
    const text = typeof prompt === 'string' ? prompt : typeof prompt[0] === 'string' ? prompt[0] : undefined
    if (text === undefined) {
      const ids = prompt as number[]
      const outside = ids.find((id) => id >= nVocab)
      if (outside !== undefined)
        throw new GatewayError(
          400,
          'invalid_request_error',
          'invalid_value',
          `token id ${outside} is not in this model's vocabulary of ${nVocab} tokens.`,
          'prompt',
        )
      completionBudget(ids.length, null, 1, contextLength, { prompt: 'prompt', max: 'max_tokens' })
      await this.generations.checkAffordable(account, modelId, ids.length)
      return ids
    }
    const tokenizer = await this.tokenizers.get(modelId)
    await this.generations.checkAffordable(account, modelId, fewestTokens(text.length, promptBounds(tokenizer.longestTokenChars, contextLength), 'prompt'))
    return fitting(await tokenizer.encode(text, promptTokenLimit(contextLength)), contextLength, 'prompt')
  }
}

/** The swarm's generation for OpenAI's sampling fields: temperature 1 and a random seed unless given, empty stops dropped. */
function generationOf(endpoint: Generation['endpoint'], body: SamplingParams, promptTokens: number[], maxTokens: number): Generation {
  if (promptTokens.length === 0) throw new GatewayError(400, 'invalid_request_error', 'invalid_value', 'the prompt is empty.', 'prompt')
  const stop = body.stop == null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter((s) => s !== '')
  return {
    endpoint,
    modelId: body.model,
    promptTokens,
    maxTokens,
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? undefined,
    seed: body.seed == null ? randomBytes(4).readUInt32LE() : body.seed >>> 0,
    stop,
  }
}

function usage(prompt: number, completion: number) {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}
