import type { AnthropicMessage, ContentBlock, MessagesRequest } from './anthropic-schemas'
import { GatewayError } from './errors'
import {
  argumentsObject,
  type OpenAiShapedAnswer,
  type OpenAiShapedChat,
  type OpenAiShapedMessage,
  type OpenAiToolCall,
  type OpenAiToolChoice,
} from './openai-shaped'

// Anthropic's Messages requests in OpenAI's chat shape and OpenAI-shaped answers in Anthropic's: pure, so each
// mapping has its test.

export function anthropicChat(body: MessagesRequest): OpenAiShapedChat {
  if (body.thinking !== undefined && body.thinking.type !== 'disabled') {
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      'extended thinking is not supported by the models of this swarm; leave thinking out.',
      'thinking',
    )
  }
  const last = body.messages.at(-1)
  if (last?.role === 'assistant') {
    throw new GatewayError(
      400,
      'invalid_request_error',
      'not_supported',
      "a last turn of the assistant's (prefilling its answer) is not supported; end the messages with a user turn.",
      `messages.${body.messages.length - 1}`,
    )
  }
  const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n')
  const choice = body.tool_choice
  const format = body.output_config?.format
  const disableParallel = choice !== undefined && choice.type !== 'none' && choice.disable_parallel_tool_use === true
  return {
    model: body.model,
    messages: [
      ...(system === '' ? [] : [{ role: 'system' as const, content: system }]),
      ...body.messages.flatMap(openAiMessages),
    ],
    max_tokens: body.max_tokens,
    // Anthropic's default temperature is 1
    temperature: body.temperature ?? 1,
    ...(body.top_p === undefined ? {} : { top_p: body.top_p }),
    ...(body.top_k === undefined ? {} : { top_k: body.top_k }),
    ...(body.stop_sequences === undefined ? {} : { stop: body.stop_sequences }),
    ...(body.tools === undefined || body.tools.length === 0
      ? {}
      : {
          tools: body.tools.map((t) => ({
            type: 'function' as const,
            function: {
              name: t.name,
              ...(t.description === undefined ? {} : { description: t.description }),
              parameters: t.input_schema,
            },
          })),
        }),
    ...(choice === undefined ? {} : { tool_choice: toolChoice(choice) }),
    ...(disableParallel ? { parallel_tool_calls: false } : {}),
    ...(format == null
      ? {}
      : {
          response_format: {
            type: 'json_schema' as const,
            json_schema: { name: 'output', schema: format.schema, strict: true },
          },
        }),
  }
}

/** Anthropic's tool_choice as OpenAI's: any is required, tool names the function. */
export function toolChoice(choice: NonNullable<MessagesRequest['tool_choice']>): OpenAiToolChoice {
  if (choice.type === 'any') return 'required'
  if (choice.type === 'tool') return { type: 'function', function: { name: choice.name } }
  return choice.type
}

/**
 * One Anthropic turn as OpenAI's: a user turn's tool_result blocks become tool messages (before its text, as the
 * results answer the previous turn's calls), an assistant turn's tool_use blocks its tool_calls.
 */
export function openAiMessages(message: AnthropicMessage, turn: number): OpenAiShapedMessage[] {
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }]
  const texts: string[] = []
  const results: OpenAiShapedMessage[] = []
  const calls: OpenAiToolCall[] = []
  message.content.forEach((block: ContentBlock, i) => {
    const param = `messages.${turn}.content.${i}`
    if (block.type === 'text' && 'text' in block) texts.push(block.text)
    else if (block.type === 'tool_use' && 'input' in block) {
      if (message.role !== 'assistant') throw misplaced('tool_use', 'an assistant', param)
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input) },
      })
    } else if (block.type === 'tool_result' && 'tool_use_id' in block) {
      if (message.role !== 'user') throw misplaced('tool_result', 'a user', param)
      const content =
        typeof block.content === 'string' ? block.content : (block.content ?? []).map((b) => b.text).join('\n')
      results.push({
        role: 'tool',
        tool_call_id: block.tool_use_id,
        content: block.is_error === true ? `Error: ${content}` : content,
      })
    } else {
      throw new GatewayError(
        400,
        'invalid_request_error',
        'not_supported',
        `content blocks of type ${block.type} are not supported (this swarm's models read text); send text, ` +
          `tool_use and tool_result blocks only.`,
        param,
      )
    }
  })
  const text = texts.join('\n')
  if (message.role === 'assistant')
    return [
      calls.length === 0
        ? { role: 'assistant', content: text }
        : { role: 'assistant', content: text === '' ? null : text, tool_calls: calls },
    ]
  return [...results, ...(texts.length === 0 ? [] : [{ role: 'user' as const, content: text }])]
}

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use'

/** OpenAI's finish as Anthropic's stop_reason and stop_sequence. */
export function stopReason(answer: Pick<OpenAiShapedAnswer, 'finish_reason' | 'stop_sequence'>): {
  stop_reason: AnthropicStopReason
  stop_sequence: string | null
} {
  if (answer.finish_reason === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null }
  if (answer.finish_reason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null }
  if (answer.stop_sequence !== undefined) return { stop_reason: 'stop_sequence', stop_sequence: answer.stop_sequence }
  return { stop_reason: 'end_turn', stop_sequence: null }
}

/** The answer's content blocks: its text (when there is any, or nothing else), then one tool_use block per call. */
export function anthropicContent(answer: Pick<OpenAiShapedAnswer, 'content' | 'tool_calls'>) {
  const calls = answer.tool_calls ?? []
  const text = answer.content === '' && calls.length > 0 ? [] : [{ type: 'text' as const, text: answer.content }]
  return [
    ...text,
    ...calls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.function.name, input: argumentsObject(c) })),
  ]
}

function misplaced(block: string, role: string, param: string): GatewayError {
  return new GatewayError(
    400,
    'invalid_request_error',
    'invalid_value',
    `a ${block} block belongs in ${role} turn.`,
    param,
  )
}
