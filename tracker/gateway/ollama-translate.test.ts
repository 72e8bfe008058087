// Ollama's requests translated into OpenAI's chat shape and answers back: the pure mappings, no server.
import { describe, expect, it } from 'vitest'
import { GatewayError } from './errors'
import { OllamaChatRequest, OllamaGenerateRequest } from './ollama-schemas'
import {
  OLLAMA_DEFAULTS,
  ollamaAnswerMessage,
  ollamaChat,
  ollamaDoneReason,
  ollamaGenerateChat,
  ollamaMessages,
  ollamaSampling,
} from './ollama-translate'
import { ChatCompletionRequest } from './openai-schemas'

const chat = (body: unknown) => ollamaChat(OllamaChatRequest.parse(body))

describe('Ollama requests in OpenAI’s shape', () => {
  it('samples with Ollama’s defaults where options say nothing, and as told where they do', () => {
    expect(ollamaSampling(undefined)).toEqual({ ...OLLAMA_DEFAULTS })
    expect(ollamaSampling({ temperature: 0, top_k: 0, seed: 9, num_predict: 30, stop: ['\n'], min_p: 0.05 })).toEqual({
      temperature: 0,
      top_p: OLLAMA_DEFAULTS.top_p,
      top_k: 0,
      repeat_penalty: OLLAMA_DEFAULTS.repeat_penalty,
      min_p: 0.05,
      seed: 9,
      max_tokens: 30,
      stop: ['\n'],
    })
    // -1 and -2: until the context is full; a negative seed: a random one
    const open = ollamaSampling({ num_predict: -1, seed: -1 })
    expect(open.max_tokens).toBeUndefined()
    expect(open.seed).toBeUndefined()
  })

  it('refuses options out of range, naming them', () => {
    const bad = OllamaChatRequest.safeParse({ model: 'm', options: { repeat_penalty: 9 } })
    expect(bad.success).toBe(false)
    expect(bad.error?.issues[0]?.message).toContain('options.repeat_penalty')
    expect(OllamaChatRequest.safeParse({ model: 'm', options: { num_predict: 0 } }).success).toBe(false)
  })

  it('makes a plain chat that OpenAI’s chat schema takes', () => {
    const translated = chat({
      model: 'm',
      messages: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'hi' },
      ],
      options: { num_predict: 8 },
    })
    const openai = ChatCompletionRequest.parse(translated)
    expect(openai.messages).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: 'hi' },
    ])
    expect(openai.max_tokens).toBe(8)
    expect(openai.temperature).toBe(OLLAMA_DEFAULTS.temperature)
  })

  it('gives tool calls ids and matches each tool result to the earliest unanswered call of its name', () => {
    const messages = ollamaMessages(
      OllamaChatRequest.parse({
        model: 'm',
        messages: [
          { role: 'user', content: 'weather in Paris and Rome, and the time?' },
          {
            role: 'assistant',
            content: '',
            tool_calls: [
              { function: { name: 'weather', arguments: { city: 'Paris' } } },
              { function: { name: 'clock', arguments: {} } },
              { function: { name: 'weather', arguments: { city: 'Rome' } } },
            ],
          },
          { role: 'tool', tool_name: 'clock', content: '12:00' },
          { role: 'tool', tool_name: 'weather', content: 'sunny' },
          { role: 'tool', content: 'rain' },
        ],
      }).messages,
    )
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1_0', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_1_1', type: 'function', function: { name: 'clock', arguments: '{}' } },
        { id: 'call_1_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
      ],
    })
    expect(messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1_1', content: '12:00' },
      { role: 'tool', tool_call_id: 'call_1_0', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_1_2', content: 'rain' },
    ])
    expect(() => ollamaMessages([{ role: 'tool', content: 'orphan', tool_name: 'clock' }])).toThrow(
      /answers no earlier assistant tool call/,
    )
  })

  it('translates tools to OpenAI functions and format to response_format', () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const withTools = chat({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'weather', parameters } }],
    })
    expect(withTools.tools).toEqual([{ type: 'function', function: { name: 'weather', parameters } }])
    expect(chat({ model: 'm', format: 'json' }).response_format).toEqual({ type: 'json_object' })
    expect(chat({ model: 'm', format: parameters }).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'format', schema: parameters, strict: true },
    })
    expect(chat({ model: 'm', format: '' }).response_format).toBeUndefined()
    // Neuron's extension: OpenAI's tool_choice, which Ollama's API lacks
    const forced = { type: 'function', function: { name: 'weather' } }
    expect(chat({ model: 'm', tools: withTools.tools, tool_choice: forced }).tool_choice).toEqual(forced)
    expect(chat({ model: 'm' }).tool_choice).toBeUndefined()
    expect(OllamaChatRequest.safeParse({ model: 'm', tool_choice: 'always' }).success).toBe(false)
  })

  it('refuses images, thinking, a suffix and a custom template with a typed 400 naming the field', () => {
    const refusal = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        return e instanceof GatewayError ? [e.status, e.code, e.param] : e
      }
      return 'not refused'
    }
    expect(refusal(() => chat({ model: 'm', messages: [{ role: 'user', content: 'see', images: ['aGk='] }] }))).toEqual(
      [400, 'not_supported', 'messages.0.images'],
    )
    expect(refusal(() => chat({ model: 'm', think: true }))).toEqual([400, 'not_supported', 'think'])
    expect(
      refusal(() => ollamaGenerateChat(OllamaGenerateRequest.parse({ model: 'm', prompt: 'p', suffix: 's' }))),
    ).toEqual([400, 'not_supported', 'suffix'])
    expect(
      refusal(() =>
        ollamaGenerateChat(OllamaGenerateRequest.parse({ model: 'm', prompt: 'p', template: '{{ .Prompt }}' })),
      ),
    ).toEqual([400, 'not_supported', 'template'])
    expect(OllamaGenerateRequest.safeParse({ model: 'm', prompt: 'p', context: [1, 2] }).success).toBe(false)
  })

  it('renders /api/generate as a system and a user turn', () => {
    expect(
      ollamaGenerateChat(OllamaGenerateRequest.parse({ model: 'm', prompt: 'Once', system: 'Be brief.' })).messages,
    ).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Once' },
    ])
  })

  it('answers tool calls with their arguments as objects, and done_reason stop for them', () => {
    const answer = {
      content: '',
      tool_calls: [
        { id: 'call_0', type: 'function' as const, function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      ],
    }
    expect(ollamaAnswerMessage(answer)).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ function: { name: 'weather', arguments: { city: 'Paris' } } }],
    })
    expect(ollamaAnswerMessage({ content: 'hello' })).toEqual({ role: 'assistant', content: 'hello' })
    expect([ollamaDoneReason('tool_calls'), ollamaDoneReason('stop'), ollamaDoneReason('length')]).toEqual([
      'stop',
      'stop',
      'length',
    ])
  })
})
