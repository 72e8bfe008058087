import type { IncomingMessage } from 'node:http'
import type { StoredAccount } from '../ledger/ledger-store'
import { authenticateKey } from './auth'
import { type PlannedChat, planChat, responseFormatGrammar } from './chat-generation'
import type { Chunk } from './chunks'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'
import type { Generation, PaidGenerations } from './generation'
import { generationsOf } from './openai-sampling'
import type { ChatCompletionRequest } from './openai-schemas'
import type { OpenAiShapedChat, OpenAiShapedSampling } from './openai-shaped'
import { completionBudget, fewestTokens, fitting, promptBounds, promptTokenLimit } from './prompt-bounds'
import type { PromptTokenizers } from './prompt-tokenizers'
import type { RateLimit } from './rate-limit'

/** How an API names the fields a translated request came from, for errors that point at the caller's own field. */
export interface ForeignParams {
  readonly messages: string
  readonly tools: string
  readonly format: string
}

/**
 * Generations asked for in another API's words (Ollama's, Anthropic's), translated into OpenAI's chat shape:
 * the same authentication, rate limit, prompt bounds, credit checks and paid generations as /v1/chat/completions.
 */
export class TranslatedGenerations {
  constructor(
    private readonly deps: Pick<GatewayDeps, 'catalog' | 'accounts' | 'admits'>,
    private readonly generations: PaidGenerations,
    private readonly rateLimit: RateLimit,
    private readonly tokenizers: PromptTokenizers,
  ) {}

  /** The account of `key`, counted against its rate limit; 401 without one, saying `howToSendKey`. */
  async admit(key: string | undefined, howToSendKey: string): Promise<StoredAccount> {
    const account = await authenticateKey(key, this.deps, howToSendKey)
    await this.rateLimit.check(account)
    return account
  }

  /** A request body, refused unparsed past the largest whose prompt could fit one of the models' contexts. */
  body(req: IncomingMessage, param: string): Promise<unknown> {
    return this.tokenizers.readPromptBody(req, param)
  }

  /**
   * A chat through the OpenAI chat path (`planChat`): the model's template, tools and tool results, a grammar for
   * tool calls and JSON output, the same bounds. `max_tokens` past the context is refused (Anthropic) unless
   * `clampMaxTokens` (Ollama's num_predict, which stops where the context is full). Errors name the caller's fields.
   */
  async chat(
    account: StoredAccount,
    chat: OpenAiShapedChat,
    params: ForeignParams,
    clampMaxTokens: boolean,
    endpoint: Generation['endpoint'],
  ): Promise<PlannedChat> {
    const deps = {
      catalog: this.deps.catalog,
      generations: this.generations,
      tokenizers: this.tokenizers,
      defaultChatMaxTokens: UNTIL_FULL_UNKNOWN_CONTEXT,
    }
    const options = {
      samplers: samplersOf(chat),
      ...(clampMaxTokens ? { clampMaxTokens: { untilFull: UNTIL_FULL_UNKNOWN_CONTEXT } } : {}),
    }
    try {
      return await planChat(deps, account, chatRequestOf(chat), endpoint, options)
    } catch (e) {
      throw inForeignWords(e, params)
    }
  }

  /**
   * A plain text prompt (Ollama's raw generate), tokenized as it
   * is, sampled as `chat` says; its budget clamped to the context.
   */
  async text(
    account: StoredAccount,
    prompt: string,
    chat: OpenAiShapedChat,
    params: ForeignParams,
    endpoint: Generation['endpoint'],
  ): Promise<PlannedChat> {
    const { contextLength } = this.deps.catalog.get(chat.model).manifest
    const request = chatRequestOf(chat)
    let grammar: string | undefined
    try {
      grammar = responseFormatGrammar(request.response_format)
    } catch (e) {
      throw inForeignWords(e, params)
    }
    const tokenizer = await this.tokenizers.get(chat.model)
    await this.generations.checkAffordable(
      account,
      chat.model,
      fewestTokens(prompt.length, promptBounds(tokenizer.longestTokenChars, contextLength), 'prompt'),
    )
    const tokens = fitting(await tokenizer.encode(prompt, promptTokenLimit(contextLength)), contextLength, 'prompt')
    const untilFull = contextLength > 0 ? contextLength : UNTIL_FULL_UNKNOWN_CONTEXT
    const maxTokens = completionBudget(tokens.length, null, chat.max_tokens ?? untilFull, contextLength, {
      prompt: 'prompt',
      max: 'max_tokens',
    })
    const generations = generationsOf(endpoint, request, tokens, maxTokens, { ...samplersOf(chat), grammar })
    return {
      generations,
      promptTokens: tokens.length,
      streamsText: true,
      answer: (content, finishReason) => ({ content, toolCalls: undefined, finishReason }),
    }
  }

  /** Runs a planned chat's one generation (these APIs have no `n`). */
  run(account: StoredAccount, chat: PlannedChat, caller: AbortSignal): AsyncGenerator<Chunk, void> {
    const [generation] = chat.generations
    if (generation === undefined || chat.generations.length > 1)
      throw new Error(`a translated chat plans one generation, not ${chat.generations.length}`)
    return this.generations.run(account, generation, caller)
  }
}

/** A model whose manifest does not say its context: a request without a token budget gets this many. */
const UNTIL_FULL_UNKNOWN_CONTEXT = 256

/** A translated chat as planChat takes it: OpenAI's request body. */
function chatRequestOf(chat: OpenAiShapedChat): ChatCompletionRequest {
  return {
    model: chat.model,
    messages: chat.messages.map((m) =>
      m.role === 'assistant'
        ? {
            role: m.role,
            content: m.content,
            tool_calls: m.tool_calls?.map((c) => ({ ...c, function: { ...c.function } })),
          }
        : { ...m },
    ),
    max_tokens: chat.max_tokens,
    temperature: chat.temperature,
    top_p: chat.top_p,
    presence_penalty: chat.presence_penalty,
    frequency_penalty: chat.frequency_penalty,
    seed: chat.seed,
    stop: chat.stop === undefined ? undefined : [...chat.stop],
    tools: chat.tools?.map((t) => ({ type: t.type, function: { ...t.function } })),
    tool_choice: chat.tool_choice,
    parallel_tool_calls: chat.parallel_tool_calls,
    response_format: chat.response_format,
  }
}

function samplersOf(s: OpenAiShapedSampling): Pick<Generation, 'topK' | 'minP' | 'repeatPenalty'> {
  return {
    ...(s.top_k === undefined ? {} : { topK: s.top_k }),
    ...(s.min_p === undefined ? {} : { minP: s.min_p }),
    ...(s.repeat_penalty === undefined ? {} : { repeatPenalty: s.repeat_penalty }),
  }
}

/**
 * An error of the OpenAI chat path with its `param` in the
 * caller's API's words (Ollama's `format`, Anthropic's `tools`).
 */
function inForeignWords(e: unknown, params: ForeignParams): unknown {
  if (!(e instanceof GatewayError) || e.param === null) return e
  const param =
    e.param === 'response_format'
      ? params.format
      : e.param === 'tools'
        ? params.tools
        : e.param === 'messages'
          ? params.messages
          : e.param
  return param === e.param ? e : new GatewayError(e.status, e.type, e.code, e.message, param, e.extra)
}
