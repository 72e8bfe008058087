// What Ollama's and Anthropic's endpoints translate their requests into and their answers from: OpenAI's
// chat shapes (the API reference's), so that one generation path serves all three APIs, tools and JSON
// output included once the OpenAI path takes them.
import { GatewayError } from './errors'

export interface OpenAiToolCall {
  readonly id: string
  readonly type: 'function'
  /** `arguments` is a JSON text, as OpenAI sends it. */
  readonly function: { readonly name: string; readonly arguments: string }
}

export type OpenAiShapedMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly tool_calls?: readonly OpenAiToolCall[] }
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string }

export interface OpenAiTool {
  readonly type: 'function'
  readonly function: {
    readonly name: string
    readonly description?: string
    readonly parameters?: Readonly<Record<string, unknown>>
  }
}

export type OpenAiToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { readonly type: 'function'; readonly function: { readonly name: string } }

export type OpenAiResponseFormat =
  | { readonly type: 'json_object' }
  | {
      readonly type: 'json_schema'
      readonly json_schema: {
        readonly name: string
        readonly schema: Readonly<Record<string, unknown>>
        readonly strict?: boolean
      }
    }

/**
 * The sampling of a translated request. `top_k`, `min_p` and `repeat_penalty` are not OpenAI's: llama.cpp's
 * server takes them under these names, and Ollama and Anthropic requests set them.
 */
export interface OpenAiShapedSampling {
  /** Absent: as many as the context has room for (Ollama's num_predict -1). */
  readonly max_tokens?: number
  readonly temperature?: number
  readonly top_p?: number
  readonly top_k?: number
  readonly min_p?: number
  readonly repeat_penalty?: number
  readonly presence_penalty?: number
  readonly frequency_penalty?: number
  /** Absent: a fresh random seed. */
  readonly seed?: number
  readonly stop?: readonly string[]
}

export interface OpenAiShapedChat extends OpenAiShapedSampling {
  readonly model: string
  readonly messages: readonly OpenAiShapedMessage[]
  readonly tools?: readonly OpenAiTool[]
  readonly tool_choice?: OpenAiToolChoice
  readonly parallel_tool_calls?: boolean
  readonly response_format?: OpenAiResponseFormat
}

/** An answer as OpenAI's chat completion gives it (one choice), which the translators turn back into their API's. */
export interface OpenAiShapedAnswer {
  readonly content: string
  readonly tool_calls?: readonly OpenAiToolCall[]
  readonly finish_reason: 'stop' | 'length' | 'tool_calls'
  /** Which stop string ended it, when one did (OpenAI does not say; Anthropic does). */
  readonly stop_sequence?: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
}

/**
 * A tool call's arguments as the object Ollama and Anthropic
 * carry (OpenAI's are its JSON text); 500 when they are not one.
 */
export function argumentsObject(call: OpenAiToolCall): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(call.function.arguments)
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>
  } catch {}
  throw new GatewayError(
    500,
    'server_error',
    'internal',
    `tool call ${call.id}'s arguments are not a JSON object: ${call.function.arguments.slice(0, 200)}`,
  )
}
