import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  type ChatModelResponse,
  type ChatWrapper,
  resolveChatWrapper,
} from 'node-llama-cpp'

type ResponsePart = ChatModelResponse['response'][number]

import { NeuronError } from '../protocol'
import type { ModelTokenizer } from './tokenizer'

/** A tool call an assistant message made: its arguments are a JSON object's text, as OpenAI carries them. */
export interface ChatToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

export interface ChatMessage {
  readonly role: 'system' | 'developer' | 'user' | 'assistant' | 'tool'
  readonly content: string
  /** An assistant message's tool calls. */
  readonly toolCalls?: readonly ChatToolCall[]
  /** A tool message's answer to this call. */
  readonly toolCallId?: string
}

/** Function definitions as node-llama-cpp's chat wrappers document them in the prompt. */
export type ChatFunctions = ChatModelFunctions

const wrappers = new WeakMap<ModelTokenizer, ChatWrapper>()

/**
 * OpenAI `messages` as node-llama-cpp's chat history, ending where the assistant's reply begins: an empty model
 * turn, or, after tool results, the model turn that made the calls (the model goes on from their results).
 * A tool call's result is the tool message answering its id (JSON when it parses, else its text).
 */
export function chatHistoryOf(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = []
  const calls = new Map<string, { result: unknown }>()
  let turn: ResponsePart[] | undefined // the model turn tool results continue
  let previous: ChatMessage | undefined
  for (const m of messages) {
    const before = previous
    previous = m
    if (m.role === 'tool') {
      const call = calls.get(m.toolCallId ?? '')
      if (call === undefined || turn === undefined)
        throw new NeuronError(
          'bad_request',
          `the tool message for call ${m.toolCallId ?? '(none)'} answers no tool call of the assistant message ` +
            `before it.`,
        )
      call.result = parsedOrText(m.content)
      continue
    }
    if (m.role !== 'assistant') {
      turn = undefined
      history.push(m.role === 'user' ? { type: 'user', text: m.content } : { type: 'system', text: m.content })
      continue
    }
    const response: ResponsePart[] = m.content === '' && (m.toolCalls ?? []).length > 0 ? [] : [m.content]
    for (const c of m.toolCalls ?? []) {
      const call = { type: 'functionCall' as const, name: c.name, params: parsedArguments(c), result: '' as unknown }
      calls.set(c.id, call)
      response.push(call)
    }
    // An assistant message after tool results goes on in the same model turn.
    const continued = before?.role === 'tool' ? turn : undefined
    if (continued !== undefined) continued.push(...response)
    else history.push({ type: 'model', response })
    turn = (m.toolCalls ?? []).length === 0 ? undefined : (continued ?? response)
  }
  if (messages.at(-1)?.role !== 'tool') history.push({ type: 'model', response: [] })
  return history
}

function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function parsedArguments(call: ChatToolCall): unknown {
  try {
    return JSON.parse(call.arguments)
  } catch {
    throw new NeuronError(
      'bad_request',
      `the arguments of tool call ${call.id} (${call.name}) are not JSON: ${call.arguments.slice(0, 80)}`,
    )
  }
}

/**
 * Renders OpenAI `messages` to prompt tokens with the model's own chat template (its GGUF's Jinja
 * template when it has one; node-llama-cpp's closest built-in wrapper otherwise), ending where the
 * assistant's reply begins.
 */
export function renderChat(tokenizer: ModelTokenizer, messages: readonly ChatMessage[]): number[] {
  let wrapper = wrappers.get(tokenizer)
  if (wrapper === undefined) {
    wrapper = resolveChatWrapper(tokenizer.model, { warningLogs: false })
    wrappers.set(tokenizer, wrapper)
  }
  const { contextText } = wrapper.generateContextState({ chatHistory: chatHistoryOf(messages) })
  return [...contextText.tokenize(tokenizer.model.tokenizer)]
}
