import { randomBytes } from 'node:crypto'
import { GatewayError } from './errors'
import { GrammarBuilder, gbnfLiteral } from './json-schema-grammar'
import type { ChatCompletionRequest } from './openai-schemas'

/** How the model's chat template writes function calls, as plain text (from node-llama-cpp's wrapper settings). */
export interface CallSyntax {
  readonly prefix: string
  readonly paramsPrefix: string
  readonly suffix: string
  /** Around and between several calls in one turn ('' and a newline without a parallel syntax). */
  readonly sectionPrefix: string
  readonly betweenCalls: string
  readonly sectionSuffix: string
}

export interface ToolCall {
  readonly id: string
  readonly type: 'function'
  readonly function: { readonly name: string; readonly arguments: string }
}

type Tools = NonNullable<ChatCompletionRequest['tools']>
type ToolChoice = NonNullable<ChatCompletionRequest['tool_choice']>

/**
 * LlamaText's JSON (a string, special-tokens text, or a list of them) as text; undefined when it holds a special token.
 */
function textOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return ''
  if (typeof value === 'string') return value
  if (Array.isArray(value)) {
    const parts = value.map(textOf)
    return parts.every((p) => p !== undefined) ? parts.join('') : undefined
  }
  if (typeof value === 'object' && 'type' in value && value.type === 'specialTokensText' && 'value' in value)
    return String(value.value)
  return undefined
}

/**
 * The call syntax of node-llama-cpp's `settings.functions`; a 400
 * when it is written with special tokens, which text cannot carry.
 */
export function callSyntaxOf(settings: unknown): CallSyntax {
  const s = (settings ?? {}) as { call?: Record<string, unknown>; parallelism?: { call?: Record<string, unknown> } }
  const parallel = s.parallelism?.call
  const parts = [
    s.call?.prefix,
    s.call?.paramsPrefix,
    s.call?.suffix,
    parallel?.sectionPrefix,
    parallel?.betweenCalls,
    parallel?.sectionSuffix,
  ].map(textOf)
  const [prefix, paramsPrefix, suffix, sectionPrefix, betweenCalls, sectionSuffix] = parts
  if (
    prefix === undefined ||
    paramsPrefix === undefined ||
    suffix === undefined ||
    sectionPrefix === undefined ||
    sectionSuffix === undefined ||
    !prefix
  )
    throw new GatewayError(
      400,
      'invalid_request_error',
      'tools_unsupported',
      "this model's chat template writes function calls with special tokens; it cannot take tools here.",
      'tools',
    )
  return {
    prefix,
    paramsPrefix,
    suffix,
    sectionPrefix,
    betweenCalls: parallel === undefined ? '\n' : (betweenCalls ?? ''),
    sectionSuffix,
  }
}

/**
 * The grammar `tool_choice` asks for (undefined: free text): one call to the named function, one or more calls
 * (`required`; one when `parallel_tool_calls` is false), or either calls or text that does not begin like one
 * (`auto`, the default with tools; `answer` is what text must be then: a response_format's JSON). Each call's
 * arguments follow its function's parameters schema.
 */
export function toolGrammar(
  tools: Tools,
  choice: ToolChoice,
  parallel: boolean,
  syntax: CallSyntax,
  answer?: { builder: GrammarBuilder; root: string },
): string | undefined {
  if (choice === 'none') return undefined
  const b = answer?.builder ?? new GrammarBuilder('tools')
  const callOf = (t: Tools[number]) =>
    b.rule(
      [
        gbnfLiteral(syntax.prefix + t.function.name + syntax.paramsPrefix),
        t.function.parameters === undefined ? '"{}"' : b.schema(t.function.parameters, `/${t.function.name}`),
        gbnfLiteral(syntax.suffix),
      ].join(' '),
      'call',
    )
  const section = (call: string, several: boolean) =>
    [
      gbnfLiteral(syntax.sectionPrefix),
      call,
      several ? `(${gbnfLiteral(syntax.betweenCalls)} ${call})*` : '',
      gbnfLiteral(syntax.sectionSuffix),
    ].join(' ')
  if (typeof choice === 'object') {
    const tool = tools.find((t) => t.function.name === choice.function.name)
    if (tool === undefined)
      throw new GatewayError(
        400,
        'invalid_request_error',
        'invalid_value',
        `tool_choice names the function ${choice.function.name}, which is not among the tools.`,
        'tool_choice',
      )
    return b.rules(b.rule(section(callOf(tool), false), 'calls'))
  }
  const calls = b.rule(section(b.rule(tools.map(callOf).join(' | '), 'anycall'), parallel), 'calls')
  if (choice === 'required') return b.rules(calls)
  const first = [...(syntax.sectionPrefix + syntax.prefix)][0] ?? ''
  const text =
    answer?.root ??
    b.rule(
      `"" | [^${gbnfLiteral(first)
        .slice(1, -1)
        .replace(/[\]^-]/g, '\\$&')}] .*`,
      'text',
    )
  return b.rules(`${calls} | ${text}`)
}

/** Where the JSON value starting at `from` ends (strings and nesting followed), or -1 when it does not. */
function jsonEnd(text: string, from: number): number {
  let depth = 0
  let inString = false
  for (let i = from; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{' || c === '[') depth++
    else if (c === '}' || c === ']') {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return -1
}

/**
 * The tool calls `text` makes in the template's syntax, or undefined
 * when it is not (only) calls: then it is the answer's text.
 */
export function parseToolCalls(text: string, syntax: CallSyntax, tools: Tools): ToolCall[] | undefined {
  const names = new Set(tools.map((t) => t.function.name))
  let at = 0
  const expect = (s: string) => {
    if (!text.startsWith(s, at)) return false
    at += s.length
    return true
  }
  if (!expect(syntax.sectionPrefix)) return undefined
  const calls: ToolCall[] = []
  for (;;) {
    if (!expect(syntax.prefix)) return undefined
    const open = text.indexOf(syntax.paramsPrefix, at)
    const name = open === -1 ? '' : text.slice(at, open)
    if (!names.has(name)) return undefined
    at = open + syntax.paramsPrefix.length
    const end = jsonEnd(text, at)
    if (end === -1) return undefined
    let args: unknown
    try {
      args = JSON.parse(text.slice(at, end))
    } catch {
      return undefined
    }
    at = end
    if (!expect(syntax.suffix)) return undefined
    calls.push({
      id: `call_${randomBytes(12).toString('hex')}`,
      type: 'function',
      function: { name, arguments: JSON.stringify(args) },
    })
    // The section may end in white space itself (Qwen's "<|im_end|>\n"): only white space may follow it.
    if (expect(syntax.sectionSuffix) && text.slice(at).trim() === '') return calls
    if (!expect(syntax.betweenCalls)) return undefined
  }
}
