import { MAX_GRAMMAR_BYTES } from '../../protocol'
import type { ChatFunctions, ChatMessage } from '../../text/chat-template'
import type { StoredAccount } from '../ledger/ledger-store'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'
import type { Generation, PaidGenerations } from './generation'
import { GrammarBuilder } from './json-schema-grammar'
import { generationsOf } from './openai-sampling'
import type { ChatCompletionRequest, ChatMessageInput } from './openai-schemas'
import {
  checkMaxTokens,
  completionBudget,
  fewestTokens,
  fitting,
  promptBounds,
  promptTokenLimit,
} from './prompt-bounds'
import type { PromptTokenizers } from './prompt-tokenizers'
import { callSyntaxOf, parseToolCalls, type ToolCall, toolGrammar } from './tool-calls'

/** What a chat needs of the gateway. */
export interface ChatDeps {
  readonly catalog: GatewayDeps['catalog']
  readonly generations: PaidGenerations
  readonly tokenizers: PromptTokenizers
  readonly defaultChatMaxTokens: number
}

/** A finished choice as OpenAI's chat answers it: text, or the tool calls it made. */
export interface ChatAnswer {
  readonly content: string | null
  readonly toolCalls: readonly ToolCall[] | undefined
  readonly finishReason: 'stop' | 'length' | 'tool_calls'
}

export interface PlannedChat {
  /** One generation per choice (`n`), each paid on its own. */
  readonly generations: readonly Generation[]
  readonly promptTokens: number
  /** False when the answer may be tool calls: its text is held until it ends, then given as content or calls. */
  readonly streamsText: boolean
  /** A choice's finished text as content or tool calls. */
  answer(text: string, finishReason: 'stop' | 'length'): ChatAnswer
}

/** What a translated API (Ollama's, Anthropic's) asks beyond OpenAI's chat fields. */
export interface ChatPlanOptions {
  /** Samplers OpenAI lacks: Ollama's options and Anthropic's top_k. */
  readonly samplers?: Pick<Generation, 'topK' | 'minP' | 'repeatPenalty'>
  /**
   * Ollama's num_predict: a budget past the context stops where the context is full instead of being refused,
   * and no budget means until the context is full (`untilFull` tokens when the model does not say its context).
   */
  readonly clampMaxTokens?: { readonly untilFull: number }
}

/**
 * The one entry point from an OpenAI-shaped chat request (any endpoint that speaks chat: OpenAI's, Ollama's,
 * Anthropic's, once mapped to it) to the swarm's generations: the messages, tool calls and tool results rendered
 * with the model's chat template, `tools`/`tool_choice`/`response_format` as a grammar the last hop holds the output
 * to, the sampling fields, and how the text answers. Refuses (400/402/404) before any work.
 */
export async function planChat(
  deps: ChatDeps,
  account: StoredAccount,
  body: ChatCompletionRequest,
  endpoint: Generation['endpoint'] = 'chat.completions',
  options: ChatPlanOptions = {},
): Promise<PlannedChat> {
  const { contextLength } = deps.catalog.get(body.model).manifest // 404 before any work
  const maxParam = body.max_completion_tokens == null ? 'max_tokens' : 'max_completion_tokens'
  const requested = body.max_completion_tokens ?? body.max_tokens
  if (options.clampMaxTokens === undefined) checkMaxTokens(requested, maxParam, contextLength)
  if (body.top_logprobs != null && body.logprobs !== true)
    throw new GatewayError(
      400,
      'invalid_request_error',
      'invalid_value',
      'top_logprobs needs logprobs: true.',
      'top_logprobs',
    )
  const tokenizer = await deps.tokenizers.get(body.model)
  const messages = body.messages.map(chatMessageOf)
  const tools = body.tools ?? undefined
  const choice = tools === undefined ? 'none' : (body.tool_choice ?? 'auto')
  if (tools === undefined && body.tool_choice != null && body.tool_choice !== 'none')
    throw new GatewayError(400, 'invalid_request_error', 'invalid_value', 'tool_choice needs tools.', 'tool_choice')
  const syntax = tools === undefined || choice === 'none' ? undefined : callSyntaxOf(tokenizer.functionSyntax)
  const grammar = grammarOf(body, tools, choice, syntax)
  const chars = messages.reduce((n, m) => n + m.content.length, 0)
  const fewest = fewestTokens(chars, promptBounds(tokenizer.longestTokenChars, contextLength), 'messages')
  await deps.generations.checkAffordable(account, body.model, fewest)
  const functions: ChatFunctions | undefined =
    tools === undefined
      ? undefined
      : Object.fromEntries(
          tools.map((t) => [
            t.function.name,
            { description: t.function.description, params: t.function.parameters as never },
          ]),
        )
  const promptTokens = fitting(
    await tokenizer.chat(messages, promptTokenLimit(contextLength), functions),
    contextLength,
    'messages',
  )
  const budgetParams = { prompt: 'messages', max: maxParam } as const
  const maxTokens =
    options.clampMaxTokens === undefined
      ? completionBudget(promptTokens.length, requested, deps.defaultChatMaxTokens, contextLength, budgetParams)
      : completionBudget(
          promptTokens.length,
          null,
          requested ?? (contextLength > 0 ? contextLength : options.clampMaxTokens.untilFull),
          contextLength,
          budgetParams,
        )
  const generations = generationsOf(endpoint, body, promptTokens, maxTokens, {
    ...options.samplers,
    grammar,
    ...(body.logprobs === true ? { logprobs: body.top_logprobs ?? 0 } : {}),
  })
  return {
    generations,
    promptTokens: promptTokens.length,
    streamsText: syntax === undefined,
    answer: (text, finishReason) => {
      const calls = syntax === undefined || tools === undefined ? undefined : parseToolCalls(text, syntax, tools)
      if (calls === undefined || calls.length === 0) return { content: text, toolCalls: undefined, finishReason }
      return { content: null, toolCalls: calls, finishReason: 'tool_calls' }
    },
  }
}

/** An OpenAI message as the chat template takes it. */
function chatMessageOf(m: ChatMessageInput): ChatMessage {
  const content =
    m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('')
  if (m.role === 'tool') return { role: 'tool', content, toolCallId: m.tool_call_id }
  if (m.role === 'assistant' && m.tool_calls != null)
    return {
      role: 'assistant',
      content,
      toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
    }
  return { role: m.role, content }
}

/** The grammar a response format alone asks for (a raw prompt's JSON output); undefined for free text. */
export function responseFormatGrammar(format: ChatCompletionRequest['response_format']): string | undefined {
  return grammarOf({ response_format: format }, undefined, 'none', undefined)
}

/**
 * The grammar `response_format` and the tools ask for; undefined
 * for free text. A 400 when it outgrows what a host takes.
 */
function grammarOf(
  body: Pick<ChatCompletionRequest, 'response_format' | 'parallel_tool_calls'>,
  tools: ChatCompletionRequest['tools'],
  choice: NonNullable<ChatCompletionRequest['tool_choice']>,
  syntax: ReturnType<typeof callSyntaxOf> | undefined,
): string | undefined {
  const format = body.response_format
  const builder = new GrammarBuilder('response_format')
  const answer =
    format == null || format.type === 'text'
      ? undefined
      : {
          builder,
          root: format.type === 'json_object' ? builder.anyObject() : builder.schema(format.json_schema.schema ?? {}),
        }
  const grammar =
    tools != null && syntax !== undefined
      ? toolGrammar(tools, choice, body.parallel_tool_calls ?? true, syntax, answer)
      : answer?.builder.rules(answer.root)
  if (grammar !== undefined && grammar.length > MAX_GRAMMAR_BYTES)
    throw new GatewayError(
      400,
      'invalid_request_error',
      'grammar_too_large',
      `the tools' and response format's schemas make a grammar of ${grammar.length} characters; a host takes at ` +
        `most ${MAX_GRAMMAR_BYTES}. Simplify the schemas.`,
      tools == null ? 'response_format' : 'tools',
    )
  return grammar
}
