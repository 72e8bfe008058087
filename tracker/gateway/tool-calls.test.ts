// Tool calls written in a chat template's syntax: the grammar each tool_choice makes accepts exactly the calls the
// parser reads back, several in a parallel section; OpenAI's messages with tool calls and results become the chat
// history node-llama-cpp renders.
import { describe, expect, it } from 'vitest'
import { parseGbnf } from '../../host/grammar/gbnf'
import { GrammarState } from '../../host/grammar/matcher'
import { chatHistoryOf } from '../../text/chat-template'
import { callSyntaxOf, parseToolCalls, toolGrammar } from './tool-calls'

// Llama2ChatWrapper's settings (stories260K's fallback) and a
// parallel syntax like Llama 3.1's, as node-llama-cpp gives them.
const LLAMA2 = {
  call: {
    prefix: '||call: ',
    paramsPrefix: [{ type: 'specialTokensText', value: '(' }],
    suffix: [{ type: 'specialTokensText', value: ')' }],
  },
}
const PARALLEL = {
  call: { prefix: '<call>', paramsPrefix: ' ', suffix: '</call>' },
  parallelism: { call: { sectionPrefix: '<calls>', betweenCalls: '\n', sectionSuffix: '</calls>' } },
}
const TOOLS = [
  {
    type: 'function' as const,
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'integer' } },
        required: ['a', 'b'],
      },
    },
  },
  { type: 'function' as const, function: { name: 'now' } },
]

function accepts(grammar: string | undefined, text: string): boolean {
  return GrammarState.start(parseGbnf(grammar ?? '')).advance(text)?.accepts === true
}

describe('tool calls in a chat template’s syntax', () => {
  it('required: the grammar takes well-formed calls only, and they parse back into OpenAI’s shape', () => {
    const syntax = callSyntaxOf(LLAMA2)
    const grammar = toolGrammar(TOOLS, 'required', true, syntax)
    const text = '||call: add({"a": 1, "b": 2})\n||call: now({})'
    expect(accepts(grammar, text)).toBe(true)
    expect(accepts(grammar, '||call: add({"a": 1})')).toBe(false)
    expect(accepts(grammar, '||call: sub({"a": 1, "b": 2})')).toBe(false)
    expect(accepts(grammar, 'hello')).toBe(false)
    const calls = parseToolCalls(text, syntax, TOOLS)
    expect(calls?.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['add', { a: 1, b: 2 }],
      ['now', {}],
    ])
    expect(new Set(calls?.map((c) => c.id)).size).toBe(2)
  })

  it(
    'parallel_tool_calls false and a named choice allow one call; auto allows text that does not begin like ' +
      'a call',
    () => {
      const syntax = callSyntaxOf(PARALLEL)
      const two = '<calls><call>add {"a": 1, "b": 2}</call>\n<call>now {}</call></calls>'
      expect(accepts(toolGrammar(TOOLS, 'required', true, syntax), two)).toBe(true)
      expect(parseToolCalls(two, syntax, TOOLS)?.length).toBe(2)
      expect(accepts(toolGrammar(TOOLS, 'required', false, syntax), two)).toBe(false)
      expect(
        accepts(
          toolGrammar(TOOLS, { type: 'function', function: { name: 'now' } }, true, syntax),
          '<calls><call>now {}</call></calls>',
        ),
      ).toBe(true)
      expect(
        accepts(
          toolGrammar(TOOLS, { type: 'function', function: { name: 'now' } }, true, syntax),
          '<calls><call>add {"a": 1, "b": 2}</call></calls>',
        ),
      ).toBe(false)
      const auto = toolGrammar(TOOLS, 'auto', true, syntax)
      expect(accepts(auto, 'Just text.')).toBe(true)
      expect(accepts(auto, two)).toBe(true)
      expect(parseToolCalls('Just text.', syntax, TOOLS)).toBeUndefined()
      expect(toolGrammar(TOOLS, 'none', true, syntax)).toBeUndefined()
    },
  )

  it('reads a call whose section ends in a newline of its own, as Qwen’s "<|im_end|>\\n" does', () => {
    const qwen = callSyntaxOf({
      call: { prefix: '<tool_call>\n{"name": "', paramsPrefix: '", "arguments": ', suffix: '}\n</tool_call>' },
      parallelism: { call: { sectionPrefix: '', betweenCalls: '\n', sectionSuffix: '<|im_end|>\n' } },
    })
    const text = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call><|im_end|>\n'
    expect(accepts(toolGrammar(TOOLS, 'required', false, qwen), text)).toBe(true)
    expect(parseToolCalls(text, qwen, TOOLS)?.map((c) => c.function.arguments)).toEqual(['{"a":1,"b":2}'])
    expect(parseToolCalls(`${text}and more`, qwen, TOOLS)).toBeUndefined()
  })

  it('refuses a template whose call syntax is special tokens with tools_unsupported', () => {
    expect(() =>
      callSyntaxOf({ call: { prefix: [{ type: 'specialToken', value: 'EOT' }], paramsPrefix: '', suffix: '' } }),
    ).toThrow(/special tokens/)
  })

  it('carries tool calls and their results into the chat history, the model going on after the results', () => {
    const history = chatHistoryOf([
      { role: 'user', content: 'Add 1 and 2.' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'add', arguments: '{"a": 1, "b": 2}' }] },
      { role: 'tool', content: '3', toolCallId: 'c1' },
    ])
    expect(history).toEqual([
      { type: 'user', text: 'Add 1 and 2.' },
      { type: 'model', response: [{ type: 'functionCall', name: 'add', params: { a: 1, b: 2 }, result: 3 }] },
    ])
    expect(() => chatHistoryOf([{ role: 'tool', content: '3', toolCallId: 'nope' }])).toThrow(/answers no tool call/)
  })
})
