import { GatewayError } from './errors'
import type { OllamaChatRequest, OllamaGenerateRequest, OllamaMessage, OllamaOptions } from './ollama-schemas'
import {
  argumentsObject,
  type OpenAiResponseFormat,
  type OpenAiShapedAnswer,
  type OpenAiShapedChat,
  type OpenAiShapedMessage,
  type OpenAiShapedSampling,
  type OpenAiToolCall,
} from './openai-shaped'

// Ollama's requests in OpenAI's chat shape and OpenAI-shaped answers in Ollama's: pure, so each mapping has its test.

/** Ollama's documented defaults (docs/modelfile.md), which its clients expect when they send no options. */
export const OLLAMA_DEFAULTS = { temperature: 0.8, top_k: 40, top_p: 0.9, repeat_penalty: 1.1 } as const

/**
 * Ollama's `options` as sampling: its defaults where absent,
 * num_predict -1/-2 as "until the context is full", seed -1 as random.
 */
export function ollamaSampling(options: OllamaOptions | null | undefined): OpenAiShapedSampling {
  const o = options ?? {}
  return {
    temperature: o.temperature ?? OLLAMA_DEFAULTS.temperature,
    top_p: o.top_p ?? OLLAMA_DEFAULTS.top_p,
    top_k: o.top_k ?? OLLAMA_DEFAULTS.top_k,
    repeat_penalty: o.repeat_penalty ?? OLLAMA_DEFAULTS.repeat_penalty,
    ...(o.min_p === undefined ? {} : { min_p: o.min_p }),
    ...(o.presence_penalty === undefined ? {} : { presence_penalty: o.presence_penalty }),
    ...(o.frequency_penalty === undefined ? {} : { frequency_penalty: o.frequency_penalty }),
    ...(o.seed === undefined || o.seed < 0 ? {} : { seed: o.seed }),
    ...(o.num_predict === undefined || o.num_predict < 0 ? {} : { max_tokens: o.num_predict }),
    ...(o.stop === undefined ? {} : { stop: o.stop }),
  }
}

/** `format` as OpenAI's response_format: "json" a JSON object, a schema a json_schema; "" or absent none. */
export function ollamaResponseFormat(format: OllamaChatRequest['format']): OpenAiResponseFormat | undefined {
  if (format == null || format === '') return undefined
  if (format === 'json') return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'format', schema: format, strict: true } }
}

/**
 * Ollama's turns as OpenAI's. Ollama's tool calls carry no ids: the assistant's calls get `call_<turn>_<i>`, and
 * a tool turn answers the earliest unanswered call of its `tool_name` (or the earliest unanswered one without it).
 */
export function ollamaMessages(messages: readonly OllamaMessage[]): OpenAiShapedMessage[] {
  const unanswered: { id: string; name: string }[] = []
  return messages.map((m, turn): OpenAiShapedMessage => {
    if ((m.images?.length ?? 0) > 0) throw textOnly(`messages.${turn}.images`)
    if (m.role === 'assistant') {
      const calls: OpenAiToolCall[] = (m.tool_calls ?? []).map((c, i) => ({
        id: `call_${turn}_${i}`,
        type: 'function',
        function: { name: c.function.name, arguments: JSON.stringify(c.function.arguments) },
      }))
      unanswered.push(...calls.map((c) => ({ id: c.id, name: c.function.name })))
      return calls.length === 0
        ? { role: 'assistant', content: m.content }
        : { role: 'assistant', content: m.content === '' ? null : m.content, tool_calls: calls }
    }
    if (m.role === 'tool') {
      const at = unanswered.findIndex((c) => m.tool_name === undefined || c.name === m.tool_name)
      if (at === -1) {
        throw new GatewayError(
          400,
          'invalid_request_error',
          'invalid_value',
          `messages.${turn} is a tool result${m.tool_name === undefined ? '' : ` of ${m.tool_name}`} that answers ` +
            `no earlier assistant tool call; put the assistant's tool_calls before it.`,
          `messages.${turn}`,
        )
      }
      const [call] = unanswered.splice(at, 1)
      return { role: 'tool', tool_call_id: call?.id ?? '', content: m.content }
    }
    return { role: m.role, content: m.content }
  })
}

export function ollamaChat(body: OllamaChatRequest): OpenAiShapedChat {
  refuseThinking(body)
  const format = ollamaResponseFormat(body.format)
  return {
    model: body.model,
    messages: ollamaMessages(body.messages),
    ...ollamaSampling(body.options),
    ...(body.tools == null || body.tools.length === 0
      ? {}
      : { tools: body.tools.map((t) => ({ type: 'function' as const, function: t.function })) }),
    ...(body.tool_choice == null ? {} : { tool_choice: body.tool_choice }),
    ...(format === undefined ? {} : { response_format: format }),
  }
}

/**
 * /api/generate's prompt (and system) as a chat of one user turn, rendered with the model's template as Ollama does.
 */
export function ollamaGenerateChat(body: OllamaGenerateRequest): OpenAiShapedChat {
  refuseThinking(body)
  refuseGenerateExtras(body)
  const format = ollamaResponseFormat(body.format)
  return {
    model: body.model,
    messages: [
      ...(body.system == null || body.system === '' ? [] : [{ role: 'system' as const, content: body.system }]),
      { role: 'user', content: body.prompt },
    ],
    ...ollamaSampling(body.options),
    ...(format === undefined ? {} : { response_format: format }),
  }
}

/** What /api/generate's fields ask that this gateway cannot do, refused with what to do instead. */
export function refuseGenerateExtras(body: OllamaGenerateRequest): void {
  if ((body.images?.length ?? 0) > 0) throw textOnly('images')
  if (body.suffix != null && body.suffix !== '')
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      'suffix (fill-in-the-middle) is not supported; send the prompt alone.',
      'suffix',
    )
  if (body.template != null && body.template !== '')
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      "a custom template is not supported: prompts are rendered with the model's own chat template; send raw: true " +
        'with a prompt you rendered yourself.',
      'template',
    )
}

/** The answer's message as Ollama's: tool calls with their arguments as objects, no ids. */
export function ollamaAnswerMessage(answer: Pick<OpenAiShapedAnswer, 'content' | 'tool_calls'>) {
  const calls = (answer.tool_calls ?? []).map((c) => ({
    function: { name: c.function.name, arguments: argumentsObject(c) },
  }))
  return { role: 'assistant' as const, content: answer.content, ...(calls.length === 0 ? {} : { tool_calls: calls }) }
}

/** Ollama's done_reason: it says "stop" for an answer that ends in tool calls too. */
export function ollamaDoneReason(finish: OpenAiShapedAnswer['finish_reason']): 'stop' | 'length' {
  return finish === 'length' ? 'length' : 'stop'
}

function refuseThinking(body: { think?: boolean | string | null; logprobs?: boolean | null }): void {
  if (body.think != null && body.think !== false)
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      'thinking is not supported by the models of this swarm; send think: false or leave it out.',
      'think',
    )
  if (body.logprobs === true)
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      'logprobs are not yet supported through this endpoint; leave them out.',
      'logprobs',
    )
}

function textOnly(param: string): GatewayError {
  return new GatewayError(
    400,
    'invalid_request_error',
    'not_supported',
    "this swarm's models read text only; send the request without images.",
    param,
  )
}
