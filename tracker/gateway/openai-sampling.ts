import { randomBytes } from 'node:crypto'
import { GatewayError } from './errors'
import type { Generation } from './generation'

/** The sampling fields chat and legacy completions share, as OpenAI names them. */
export interface SamplingFields {
  model: string
  temperature?: number | null
  top_p?: number | null
  seed?: number | null
  stop?: string | string[] | null
  n?: number | null
  presence_penalty?: number | null
  frequency_penalty?: number | null
}

/**
 * The swarm's generations for OpenAI's sampling fields, one per choice (`n`): temperature 1 and a random seed
 * unless given (choice i draws with seed + i), empty stops dropped, penalties as given.
 */
export function generationsOf(
  endpoint: Generation['endpoint'],
  body: SamplingFields,
  promptTokens: number[],
  maxTokens: number,
  extra: Partial<Generation> = {},
): Generation[] {
  if (promptTokens.length === 0)
    throw new GatewayError(400, 'invalid_request_error', 'invalid_value', 'the prompt is empty.', 'prompt')
  const stop =
    body.stop == null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter((s) => s !== '')
  const seed = body.seed == null ? randomBytes(4).readUInt32LE() : body.seed >>> 0
  const one: Generation = {
    endpoint,
    modelId: body.model,
    promptTokens,
    maxTokens,
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? undefined,
    seed,
    stop,
    presencePenalty: body.presence_penalty ?? undefined,
    frequencyPenalty: body.frequency_penalty ?? undefined,
    ...extra,
  }
  return Array.from({ length: body.n ?? 1 }, (_, i) => ({ ...one, seed: (seed + i) >>> 0 }))
}

/** OpenAI's usage; `cached`: of the prompt, the tokens read from a cache (prompt_tokens_details, when any). */
export function usage(prompt: number, completion: number, cached = 0) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  }
}
