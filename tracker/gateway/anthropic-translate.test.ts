// Anthropic's Messages requests translated into OpenAI's chat shape and answers back: the pure mappings, no server.
import { describe, expect, it } from 'vitest'
import { MessagesRequest } from './anthropic-schemas'
import { anthropicChat, anthropicContent, stopReason, toolChoice } from './anthropic-translate'
import { GatewayError } from './errors'
import { ChatCompletionRequest } from './openai-schemas'

const chat = (body: Record<string, unknown>) =>
  anthropicChat(MessagesRequest.parse({ model: 'm', max_tokens: 16, ...body }))
const user = (content: unknown) => ({ role: 'user', content })

describe('Anthropic requests in OpenAI’s shape', () => {
  it(
    'makes a plain chat that OpenAI’s chat schema takes: system blocks joined, sampling and stop sequences ' +
      'carried',
    () => {
      const translated = chat({
        system: [
          { type: 'text', text: 'You tell stories.' },
          { type: 'text', text: 'Short ones.' },
        ],
        messages: [user([{ type: 'text', text: 'Once' }])],
        stop_sequences: ['THE END'],
        top_k: 20,
        top_p: 0.9,
      })
      expect(translated).toMatchObject({ max_tokens: 16, temperature: 1, top_k: 20, top_p: 0.9, stop: ['THE END'] })
      const openai = ChatCompletionRequest.parse(translated)
      expect(openai.messages).toEqual([
        { role: 'system', content: 'You tell stories.\nShort ones.' },
        { role: 'user', content: 'Once' },
      ])
      expect(chat({ messages: [user('hi')], temperature: 0 }).temperature).toBe(0)
    },
  )

  it('refuses a request without max_tokens and temperatures past 1, as Anthropic does', () => {
    expect(MessagesRequest.safeParse({ model: 'm', messages: [user('hi')] }).error?.issues[0]?.path).toEqual([
      'max_tokens',
    ])
    expect(
      MessagesRequest.safeParse({ model: 'm', max_tokens: 4, messages: [user('hi')], temperature: 1.5 }).success,
    ).toBe(false)
  })

  it('turns tool_use blocks into tool calls and tool_result blocks into tool messages ahead of the user’s text', () => {
    const translated = chat({
      messages: [
        user('weather in Paris?'),
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          ],
        },
        user([
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'no such city', is_error: true },
          { type: 'text', text: 'and tomorrow?' },
        ]),
      ],
    })
    expect(translated.messages).toEqual([
      { role: 'user', content: 'weather in Paris?' },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: no such city' },
      { role: 'user', content: 'and tomorrow?' },
    ])
  })

  it('translates tools and tool_choice to OpenAI’s', () => {
    const input_schema = { type: 'object', properties: { city: { type: 'string' } } }
    const translated = chat({
      messages: [user('hi')],
      tools: [{ name: 'weather', description: 'Weather now', input_schema }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    })
    expect(translated.tools).toEqual([
      { type: 'function', function: { name: 'weather', description: 'Weather now', parameters: input_schema } },
    ])
    expect(translated).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false })
    expect(toolChoice({ type: 'tool', name: 'weather' })).toEqual({ type: 'function', function: { name: 'weather' } })
    expect([toolChoice({ type: 'auto' }), toolChoice({ type: 'none' })]).toEqual(['auto', 'none'])
    expect(
      MessagesRequest.safeParse({
        model: 'm',
        max_tokens: 4,
        messages: [user('hi')],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      }).success,
    ).toBe(false)
  })

  it('translates output_config’s json_schema format (structured outputs) to a json_schema response_format', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
    const translated = chat({
      messages: [user('hi')],
      output_config: { effort: 'low', format: { type: 'json_schema', schema } },
    })
    expect(translated.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true },
    })
    expect(ChatCompletionRequest.parse(translated).response_format?.type).toBe('json_schema')
    expect(chat({ messages: [user('hi')] }).response_format).toBeUndefined()
  })

  it('refuses images, thinking and a prefilled assistant turn with a typed 400 naming the field', () => {
    const refusal = (body: Record<string, unknown>) => {
      try {
        chat(body)
      } catch (e) {
        return e instanceof GatewayError ? [e.status, e.code, e.param] : e
      }
      return 'not refused'
    }
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'aGk=' } }
    expect(refusal({ messages: [user([{ type: 'text', text: 'see' }, image])] })).toEqual([
      400,
      'not_supported',
      'messages.0.content.1',
    ])
    expect(refusal({ messages: [user('hi')], thinking: { type: 'enabled', budget_tokens: 1024 } })).toEqual([
      400,
      'not_supported',
      'thinking',
    ])
    expect(refusal({ messages: [user('hi'), { role: 'assistant', content: 'Once' }] })).toEqual([
      400,
      'not_supported',
      'messages.1',
    ])
    expect(refusal({ messages: [user([{ type: 'tool_use', id: 't', name: 'n', input: {} }])] })).toEqual([
      400,
      'invalid_value',
      'messages.0.content.0',
    ])
  })

  it('answers stop reasons and content blocks in Anthropic’s terms', () => {
    expect(stopReason({ finish_reason: 'stop' })).toEqual({ stop_reason: 'end_turn', stop_sequence: null })
    expect(stopReason({ finish_reason: 'stop', stop_sequence: 'THE END' })).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'THE END',
    })
    expect(stopReason({ finish_reason: 'length' })).toEqual({ stop_reason: 'max_tokens', stop_sequence: null })
    expect(stopReason({ finish_reason: 'tool_calls' })).toEqual({ stop_reason: 'tool_use', stop_sequence: null })
    const call = {
      id: 'call_1',
      type: 'function' as const,
      function: { name: 'weather', arguments: '{"city":"Paris"}' },
    }
    expect(anthropicContent({ content: '', tool_calls: [call] })).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
    ])
    expect(anthropicContent({ content: 'Sure.', tool_calls: [call] })[0]).toEqual({ type: 'text', text: 'Sure.' })
    expect(anthropicContent({ content: '' })).toEqual([{ type: 'text', text: '' }])
  })
})
