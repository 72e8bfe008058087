import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { StoredAccount } from '../ledger/ledger-store'
import { priceOf } from '../ledger/pricing'
import { authenticate } from './auth'
import { planChat } from './chat-generation'
import { type Chunk, collect, type TokenLogprob } from './chunks'
import type { GatewayDeps, GatewayOptions } from './deps'
import { GatewayError } from './errors'
import type { Generation, PaidGenerations } from './generation'
import { abortOnClose, parse, sendJson } from './http'
import { generationsOf, usage } from './openai-sampling'
import { ChatCompletionRequest, CompletionRequest } from './openai-schemas'
import {
  checkMaxTokens,
  completionBudget,
  fewestTokens,
  fitting,
  promptBounds,
  promptTokenLimit,
} from './prompt-bounds'
import type { PromptTokenizers } from './prompt-tokenizers'
import type { RateLimit } from './rate-limit'
import { type ChoiceStream, sse, startSse, streamChoices } from './sse'

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
        pricing: {
          prompt_micro_per_token: price.promptMicroPerToken,
          completion_micro_per_token: price.completionMicroPerToken,
        },
        coverage: m.coverage,
      }
    })
    sendJson(res, 200, { object: 'list', data })
  }

  async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = await authenticate(req, this.deps)
    await this.rateLimit.check(account)
    const body = parse(ChatCompletionRequest, await this.promptBody(req, 'messages'))
    const deps = {
      ...this.deps,
      generations: this.generations,
      tokenizers: this.tokenizers,
      defaultChatMaxTokens: this.options.defaultChatMaxTokens ?? 256,
    }
    const chat = await planChat(deps, account, body)
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`
    const base = { id, created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null }
    const choices = await this.start(account, chat.generations, res)
    const logprobsOf = (entries: readonly TokenLogprob[]) =>
      body.logprobs === true ? { content: entries, refusal: null } : null
    if (body.stream === true) {
      startSse(res)
      const chunk = (choices: unknown[]) => ({ ...base, object: 'chat.completion.chunk', choices })
      for (let i = 0; i < choices.length; i++)
        sse(res, chunk([{ index: i, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]))
      await streamChoices(res, choices, {
        delta: chat.streamsText
          ? (index, c) =>
              chunk([
                { index, delta: { content: c.text }, logprobs: logprobsOf(c.logprobs ?? []), finish_reason: null },
              ])
          : undefined,
        finish: (index, done, text, held) => {
          const a = chat.answer(text, done.finishReason)
          const end = chunk([{ index, delta: {}, logprobs: null, finish_reason: a.finishReason }])
          if (chat.streamsText) return [end]
          if (a.toolCalls === undefined)
            return [
              chunk([{ index, delta: { content: a.content }, logprobs: logprobsOf(held), finish_reason: null }]),
              end,
            ]
          // Each call as OpenAI streams one: its id and name, then its arguments.
          return [
            ...a.toolCalls.flatMap((c, k) => [
              chunk([
                {
                  index,
                  delta: {
                    tool_calls: [
                      { index: k, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } },
                    ],
                  },
                  logprobs: null,
                  finish_reason: null,
                },
              ]),
              chunk([
                {
                  index,
                  delta: { tool_calls: [{ index: k, function: { arguments: c.function.arguments } }] },
                  logprobs: null,
                  finish_reason: null,
                },
              ]),
            ]),
            end,
          ]
        },
        usage:
          body.stream_options?.include_usage === true
            ? (n) => ({ ...chunk([]), usage: usage(chat.promptTokens, n) })
            : undefined,
      })
      return
    }
    const results = await Promise.all(choices.map((c) => collect(c.stream, c.first)))
    sendJson(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: results.map((r, index) => {
        const a = chat.answer(r.text, r.finishReason)
        const message = {
          role: 'assistant',
          content: a.content,
          refusal: null,
          ...(a.toolCalls === undefined ? {} : { tool_calls: a.toolCalls }),
        }
        return { index, message, logprobs: logprobsOf(r.logprobs), finish_reason: a.finishReason }
      }),
      usage: usage(
        chat.promptTokens,
        results.reduce((n, r) => n + r.completionTokens, 0),
        results[0]?.cachedTokens,
      ),
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
    const maxTokens = completionBudget(promptTokens.length, body.max_tokens, 16, contextLength, {
      prompt: 'prompt',
      max: 'max_tokens',
    })
    const generations = generationsOf(
      'completions',
      body,
      promptTokens,
      maxTokens,
      body.logprobs == null ? {} : { logprobs: body.logprobs },
    )
    const id = `cmpl-${randomBytes(12).toString('hex')}`
    const base = {
      id,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      system_fingerprint: null,
    }
    const choices = await this.start(account, generations, res)
    const logprobsOf = (entries: readonly TokenLogprob[], offset: number) =>
      body.logprobs == null ? null : legacyLogprobs(entries, offset)
    if (body.stream === true) {
      startSse(res)
      const offsets = choices.map(() => 0)
      await streamChoices(res, choices, {
        delta: (index, c) => {
          const at = offsets[index] ?? 0
          offsets[index] = at + c.text.length
          return {
            ...base,
            choices: [{ index, text: c.text, logprobs: logprobsOf(c.logprobs ?? [], at), finish_reason: null }],
          }
        },
        finish: (index, done) => [
          { ...base, choices: [{ index, text: '', logprobs: null, finish_reason: done.finishReason }] },
        ],
        usage:
          body.stream_options?.include_usage === true
            ? (n) => ({ ...base, choices: [], usage: usage(promptTokens.length, n) })
            : undefined,
      })
      return
    }
    const results = await Promise.all(choices.map((c) => collect(c.stream, c.first)))
    sendJson(res, 200, {
      ...base,
      choices: results.map((r, index) => ({
        index,
        text: r.text,
        logprobs: logprobsOf(r.logprobs, 0),
        finish_reason: r.finishReason,
      })),
      usage: usage(
        promptTokens.length,
        results.reduce((n, r) => n + r.completionTokens, 0),
        results[0]?.cachedTokens,
      ),
    })
  }

  /** Starts each choice's paid generation and waits for its first chunk, so a refusal (402, 503) is an HTTP error. */
  private async start(
    account: StoredAccount,
    generations: readonly Generation[],
    res: ServerResponse,
  ): Promise<ChoiceStream[]> {
    const signal = abortOnClose(res)
    const streams = generations.map((g) => this.generations.run(account, g, signal))
    const firsts = await Promise.allSettled(streams.map((s) => s.next()))
    const failed = firsts.find((f) => f.status === 'rejected')
    if (failed !== undefined) {
      await Promise.all(streams.map((s) => s.return(undefined).catch(() => {})))
      throw failed.reason
    }
    return streams.map((stream, i) => ({
      stream,
      first: (firsts[i] as PromiseFulfilledResult<IteratorResult<Chunk, void>>).value,
    }))
  }

  /** A chat's or completion's body, refused unparsed past the largest that could fit one of the models' contexts. */
  private promptBody(req: IncomingMessage, param: 'messages' | 'prompt'): Promise<unknown> {
    return this.tokenizers.readPromptBody(req, param)
  }

  /**
   * A legacy prompt's token ids: given (each checked against the vocabulary),
   * or its text's, refused before tokenizing when it cannot fit.
   */
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
    await this.generations.checkAffordable(
      account,
      modelId,
      fewestTokens(text.length, promptBounds(tokenizer.longestTokenChars, contextLength), 'prompt'),
    )
    return fitting(await tokenizer.encode(text, promptTokenLimit(contextLength)), contextLength, 'prompt')
  }
}

/** Legacy completions' logprobs: parallel lists, the alternatives as token → log-probability, offsets into the text. */
function legacyLogprobs(entries: readonly TokenLogprob[], offset: number) {
  const offsets: number[] = []
  for (const e of entries) {
    offsets.push(offset)
    offset += e.token.length
  }
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: entries.map((e) => Object.fromEntries(e.top_logprobs.map((t) => [t.token, t.logprob]))),
    text_offset: offsets,
  }
}
