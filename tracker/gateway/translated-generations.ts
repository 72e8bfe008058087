import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { StoredAccount } from '../ledger/ledger-store'
import { authenticateKey } from './auth'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'
import type { Chunk, Generation, PaidGenerations } from './generation'
import { MAX_BODY_BYTES, readBody } from './http'
import type { OpenAiShapedChat, OpenAiShapedSampling } from './openai-shaped'
import { checkMaxTokens, completionBudget, fewestTokens, fitting, promptBounds, promptTokenLimit } from './prompt-bounds'
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
    const { bytes, contextLength } = this.tokenizers.largestPromptBody(MAX_BODY_BYTES)
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

  /**
   * A chat rendered with the model's template and bounded like /v1/chat/completions'. `max_tokens` past the context
   * is refused (Anthropic) unless `clampMaxTokens` (Ollama's num_predict, which stops where the context is full).
   */
  async chat(
    account: StoredAccount,
    chat: OpenAiShapedChat,
    params: ForeignParams,
    clampMaxTokens: boolean,
    endpoint: Generation['endpoint'],
  ): Promise<Generation> {
    notYetSupported(chat, params)
    const { contextLength } = this.deps.catalog.get(chat.model).manifest // 404 before any work
    if (!clampMaxTokens) checkMaxTokens(chat.max_tokens, 'max_tokens', contextLength)
    const tokenizer = await this.tokenizers.get(chat.model)
    const messages = chat.messages.map((m) => ({ role: m.role as 'system' | 'user' | 'assistant', content: m.content ?? '' }))
    const chars = messages.reduce((n, m) => n + m.content.length, 0)
    await this.generations.checkAffordable(account, chat.model, fewestTokens(chars, promptBounds(tokenizer.longestTokenChars, contextLength), 'messages'))
    const prompt = fitting(await tokenizer.chat(messages, promptTokenLimit(contextLength)), contextLength, 'messages')
    return generationOf(endpoint, chat.model, prompt, this.budget(prompt.length, chat, contextLength, clampMaxTokens), chat)
  }

  /** A plain text prompt (Ollama's raw generate), tokenized as it is, sampled as `chat` says; its budget clamped to the context. */
  async text(account: StoredAccount, prompt: string, chat: OpenAiShapedChat, params: ForeignParams, endpoint: Generation['endpoint']): Promise<Generation> {
    notYetSupported(chat, params)
    const { contextLength } = this.deps.catalog.get(chat.model).manifest
    const tokenizer = await this.tokenizers.get(chat.model)
    await this.generations.checkAffordable(account, chat.model, fewestTokens(prompt.length, promptBounds(tokenizer.longestTokenChars, contextLength), 'prompt'))
    const tokens = fitting(await tokenizer.encode(prompt, promptTokenLimit(contextLength)), contextLength, 'prompt')
    return generationOf(endpoint, chat.model, tokens, this.budget(tokens.length, chat, contextLength, true), chat)
  }

  run(account: StoredAccount, generation: Generation, caller: AbortSignal): AsyncGenerator<Chunk, void> {
    return this.generations.run(account, generation, caller)
  }

  private budget(promptTokens: number, sampling: OpenAiShapedSampling, contextLength: number, clamp: boolean): number {
    const untilFull = contextLength > 0 ? contextLength : DEFAULT_MAX_TOKENS_UNKNOWN_CONTEXT
    const params = { prompt: 'messages', max: 'max_tokens' } as const
    if (clamp) return completionBudget(promptTokens, null, sampling.max_tokens ?? untilFull, contextLength, params)
    return completionBudget(promptTokens, sampling.max_tokens, untilFull, contextLength, params)
  }
}

/** A model whose manifest does not say its context: a request without a token budget gets this many. */
const DEFAULT_MAX_TOKENS_UNKNOWN_CONTEXT = 256

/**
 * Tool definitions, tool turns and JSON output need the OpenAI chat path's templates and grammars (issue 28,
 * item 1); until this endpoint's translation can hand them to it, they are refused rather than ignored.
 */
function notYetSupported(chat: OpenAiShapedChat, params: ForeignParams): void {
  const refuse = (what: string, param: string) => {
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      `${what} are not yet supported through this endpoint; send the request without them (or use /v1/chat/completions).`,
      param,
    )
  }
  if ((chat.tools?.length ?? 0) > 0) refuse('tools', params.tools)
  if (chat.messages.some((m) => m.role === 'tool' || (m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0)))
    refuse('tool calls and tool results', params.messages)
  if (chat.response_format !== undefined) refuse('JSON output formats', params.format)
}

function generationOf(endpoint: Generation['endpoint'], modelId: string, promptTokens: number[], maxTokens: number, s: OpenAiShapedSampling): Generation {
  if (promptTokens.length === 0) throw new GatewayError(400, 'invalid_request_error', 'invalid_value', 'the prompt is empty.', 'prompt')
  return {
    endpoint,
    modelId,
    promptTokens,
    maxTokens,
    temperature: s.temperature ?? 1,
    topP: s.top_p,
    ...(s.top_k === undefined ? {} : { topK: s.top_k }),
    ...(s.min_p === undefined ? {} : { minP: s.min_p }),
    ...(s.repeat_penalty === undefined ? {} : { repeatPenalty: s.repeat_penalty }),
    seed: s.seed === undefined ? randomBytes(4).readUInt32LE() : s.seed >>> 0,
    stop: (s.stop ?? []).filter((x) => x !== ''),
  }
}
