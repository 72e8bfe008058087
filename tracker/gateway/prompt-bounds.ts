import { GatewayError } from './errors'

/**
 * What bounds a prompt on one model: its context (prompt and completion together, tokens) and the
 * most characters one of its tokens stands for, so a text too long for the context is refused
 * before it is tokenized (tokenizing is synchronous and native: 3.9 MB took 2 s of the event loop).
 */
export interface PromptBounds {
  readonly contextLength: number
  /**
   * The longest token's text, plus one for the space SentencePiece puts
   * before a word: a prompt of c characters has at least c / this tokens.
   */
  readonly maxCharsPerToken: number
}

/** The bounds of a model of `contextLength` tokens whose longest token is `longestTokenChars` characters. */
export function promptBounds(longestTokenChars: number, contextLength: number): PromptBounds {
  return { contextLength, maxCharsPerToken: longestTokenChars + 1 }
}

/**
 * The most bytes a request body whose prompt fits `contextLength` tokens can take: per token, its characters
 * each escaped as \uXXXX (6 bytes), or a message of its own ({"role":"user","content":""}, 29 bytes) or a token
 * id with its comma; plus 64 KiB for every other field.
 */
export function promptBodyBound(contextLength: number, longestTokenChars: number): number {
  return contextLength * Math.max(6 * (longestTokenChars + 1), 64) + 65_536
}

/**
 * Refuses (400) a text of `chars` characters that cannot fit the context
 * whatever it tokenizes to; the fewest tokens it may be otherwise.
 */
export function fewestTokens(chars: number, bounds: PromptBounds, param: 'messages' | 'prompt'): number {
  const fewest = Math.ceil(chars / bounds.maxCharsPerToken)
  if (bounds.contextLength > 0 && fewest >= bounds.contextLength) {
    throw contextExceeded(
      `This model's maximum context length is ${bounds.contextLength} tokens. However, your ${param} of ${chars} ` +
        `characters is at least ${fewest} tokens (a token of this model is at most ${bounds.maxCharsPerToken} ` +
        `characters). Please reduce the length of the ${param}.`,
      param,
    )
  }
  return Math.max(1, fewest)
}

/** Refuses (400) a max_tokens the context could never hold, before any other work, as OpenAI does. */
export function checkMaxTokens(
  requested: number | null | undefined,
  param: 'max_tokens' | 'max_completion_tokens',
  contextLength: number,
): void {
  if (requested == null || contextLength === 0 || requested < contextLength) return
  throw new GatewayError(
    400,
    'invalid_request_error',
    'invalid_value',
    `${param} is too large: ${requested}. This model supports at most ${contextLength - 1} completion tokens, ` +
      `whereas you provided ${requested}.`,
    param,
  )
}

/**
 * The completion's token budget: `requested`, refused (400) when the prompt and it pass the context;
 * without one, `fallback` clamped to what the context has left. A prompt that leaves no room is refused.
 */
export function completionBudget(
  promptTokens: number,
  requested: number | null | undefined,
  fallback: number,
  contextLength: number,
  params: { prompt: 'messages' | 'prompt'; max: 'max_tokens' | 'max_completion_tokens' },
): number {
  if (contextLength === 0) return requested ?? fallback
  if (promptTokens >= contextLength) throw promptTooLong(promptTokens, contextLength, params.prompt)
  if (requested == null) return Math.min(fallback, contextLength - promptTokens)
  if (promptTokens + requested > contextLength) {
    throw contextExceeded(
      `This model's maximum context length is ${contextLength} tokens. However, you requested ` +
        `${promptTokens + requested} tokens (${promptTokens} in your prompt; ${requested} for the completion). ` +
        `Please reduce your prompt; or completion length.`,
      params.max,
    )
  }
  return requested
}

/** The most prompt tokens worth tokenizing to ids: one token of the context is left for the completion. */
export function promptTokenLimit(contextLength: number): number {
  return contextLength === 0 ? Number.POSITIVE_INFINITY : contextLength - 1
}

/** A prompt tokenized up to promptTokenLimit: its ids, or a refusal (400) naming how many tokens it had. */
export function fitting(tokenized: Tokenized, contextLength: number, param: 'messages' | 'prompt'): number[] {
  if (tokenized.ids !== undefined) return tokenized.ids
  throw promptTooLong(tokenized.count, contextLength, param)
}

function promptTooLong(promptTokens: number, contextLength: number, param: 'messages' | 'prompt'): GatewayError {
  return contextExceeded(
    `This model's maximum context length is ${contextLength} tokens. However, your ${param} resulted in ` +
      `${promptTokens} tokens. Please reduce the length of the ${param}.`,
    param,
  )
}

function contextExceeded(message: string, param: string): GatewayError {
  return new GatewayError(400, 'invalid_request_error', 'context_length_exceeded', message, param)
}

/** A prompt's token count, and its ids when there are at most the limit asked for. */
export interface Tokenized {
  readonly count: number
  readonly ids: number[] | undefined
}
