// Tool calls and JSON answers through Ollama's and Anthropic's endpoints, driven by the unmodified `ollama` and
// `@anthropic-ai/sdk` clients against a real tracker and three real hosts on stories260K: a random-ish tiny model,
// so every well-formed call or JSON answer here is the last hop's grammar at work.
import Anthropic from '@anthropic-ai/sdk'
import { Ollama, type Message as OllamaMessage, type Tool as OllamaTool } from 'ollama'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type InProcessSwarm, startGatewaySwarm } from '../../test/programs'

const ADMIN = 'admin-token-for-translated-tools'
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let model = ''
let ollama: Ollama
let anthropic: Anthropic

const WEATHER_SCHEMA = {
  type: 'object' as const,
  properties: { town: { type: 'string', maxLength: 10 }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['town', 'unit'],
  additionalProperties: false,
}
const WeatherArgs = z.strictObject({ town: z.string().max(10), unit: z.enum(['celsius', 'fahrenheit']) })
const PERSON = {
  type: 'object' as const,
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 3 },
    alive: { type: 'boolean' },
  },
  required: ['name', 'age', 'alive'],
  additionalProperties: false,
}
const Person = z.strictObject({
  name: z.string().max(12),
  age: z.number().int(),
  pets: z
    .array(z.enum(['cat', 'dog']))
    .max(3)
    .optional(),
  alive: z.boolean(),
})
const ASK = 'What is the weather in Paris?'

describe('tools and JSON answers through the Ollama and Anthropic endpoints on a real swarm', () => {
  beforeAll(async () => {
    let dir = ''
    ;({ dir, cleanup } = await scratchDir())
    let apiKey: string
    ;({ swarm, apiKey } = await startGatewaySwarm(
      dir,
      STORIES_260K,
      { adminToken: ADMIN, requestsPerMinute: 600 },
      'translated tools',
    ))
    model = swarm.manifest.modelId
    ollama = new Ollama({ host: swarm.tracker.url, headers: { Authorization: `Bearer ${apiKey}` } })
    anthropic = new Anthropic({ apiKey, baseURL: swarm.tracker.url, maxRetries: 0 })
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
  })

  describe('Ollama', () => {
    const tools: OllamaTool[] = [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'The weather in a town', parameters: WEATHER_SCHEMA },
      },
    ]
    const options = { temperature: 1.5, top_k: 0, top_p: 1, repeat_penalty: 1, num_predict: 80 }

    it(
      'makes a tool call, streamed as one chunk or not, takes its result back as a tool turn, and gives a final ' +
        'answer',
      async () => {
        const seed = 3
        const ask: OllamaMessage[] = [{ role: 'user', content: ASK }]
        // Ollama's API has no tool_choice; Neuron takes OpenAI's as an extra field, which the client passes through
        const forced = {
          model,
          messages: ask,
          tools,
          tool_choice: { type: 'function', function: { name: 'get_weather' } },
          options: { ...options, seed },
        }
        const first = await ollama.chat(forced)
        if (first.message.tool_calls === undefined) throw new Error(`no tool call: ${JSON.stringify(first)}`)
        const call = first.message.tool_calls?.[0]
        expect(first.message.tool_calls).toHaveLength(1)
        expect(call?.function.name).toBe('get_weather')
        expect(WeatherArgs.safeParse(call?.function.arguments).success).toBe(true)
        expect(first.message.content).toBe('')
        expect(first).toMatchObject({ done: true, done_reason: 'stop' })

        const parts = []
        for await (const part of await ollama.chat({ ...forced, stream: true })) parts.push(part)
        const withCalls = parts.filter((p) => (p.message.tool_calls?.length ?? 0) > 0)
        expect(withCalls).toHaveLength(1)
        // The same call in shape, not necessarily in draw: the streamed request may start from the prefix the first
        // one left in the hosts' cache, so its logits differ from the first's by float noise between batch shapes
        // (which kernels decide: this differs between AVX2 and AVX-512 machines), and at temperature 1.5 a draw
        // can follow it.
        const streamed = withCalls[0]?.message.tool_calls ?? []
        expect(streamed).toHaveLength(1)
        expect(streamed[0]?.function.name).toBe('get_weather')
        expect(WeatherArgs.safeParse(streamed[0]?.function.arguments).success).toBe(true)
        expect(parts.at(-1)).toMatchObject({ done: true, done_reason: 'stop' })
        expect(parts.at(-1)?.eval_count).toBeGreaterThan(0)

        const final = await ollama.chat({
          model,
          messages: [...ask, first.message, { role: 'tool', tool_name: 'get_weather', content: '{"temperature": 21}' }],
          tools,
          options: { ...options, num_predict: 24, seed: seed + 1 },
        })
        expect(final.message.tool_calls).toBeUndefined()
        expect(final.message.content.length).toBeGreaterThan(0)
        // the call and its result follow the question in the prompt: the hosts may start from the cache the first
        // request left and evaluate only what follows it (Ollama's prompt_eval_count counts those), never nothing
        expect(final.prompt_eval_count).toBeGreaterThan(0)
      },
    )

    it(
      'answers a JSON-schema format that parses and validates, ' + 'streamed or not, and "json" as a JSON object',
      async () => {
        const ask = {
          model,
          messages: [{ role: 'user' as const, content: 'Describe a person.' }],
          format: PERSON,
          options: { num_predict: 200, seed: 11 },
        }
        const answer = await ollama.chat(ask)
        expect(answer.done_reason).toBe('stop')
        expect(Person.safeParse(JSON.parse(answer.message.content)).success).toBe(true)
        let streamed = ''
        for await (const part of await ollama.chat({ ...ask, stream: true })) streamed += part.message.content
        expect(streamed).toBe(answer.message.content)
        const generated = await ollama.generate({
          model,
          prompt: 'Describe a person.',
          format: PERSON,
          options: { num_predict: 200, seed: 5 },
        })
        expect(Person.safeParse(JSON.parse(generated.response ?? '')).success).toBe(true)
        // a free-form object may be cut at num_predict (a grammar does not make a tiny model finish); it begins as one
        const json = await ollama.chat({ ...ask, format: 'json', options: { num_predict: 12, seed: 3 } })
        expect(json.message.content.startsWith('{')).toBe(true)
      },
    )

    it('refuses a schema keyword outside the supported subset with a 400 naming it, in Ollama’s shape', async () => {
      const refused = ollama.chat({
        model,
        messages: [{ role: 'user', content: ASK }],
        format: { type: 'string', pattern: '^a' },
      })
      await expect(refused).rejects.toMatchObject({ status_code: 400, error: expect.stringContaining('"pattern"') })
    })
  })

  describe('Anthropic Messages', () => {
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', description: 'The weather in a town', input_schema: WEATHER_SCHEMA },
    ]
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: ASK }]

    it('makes a forced tool call as a tool_use block, takes a tool_result back and gives a final answer', async () => {
      const first = await anthropic.messages.create({
        model,
        max_tokens: 80,
        messages: ask,
        tools,
        tool_choice: { type: 'tool', name: 'get_weather' },
      })
      expect(first.stop_reason).toBe('tool_use')
      expect(first.content).toHaveLength(1)
      const use = first.content[0]
      if (use?.type !== 'tool_use') throw new Error(`no tool_use block: ${JSON.stringify(first.content)}`)
      expect(use.name).toBe('get_weather')
      expect(use.id).toMatch(/^call_/)
      expect(WeatherArgs.safeParse(use.input).success).toBe(true)

      const final = await anthropic.messages.create({
        model,
        max_tokens: 24,
        messages: [
          ...ask,
          { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: use.name, input: use.input }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temperature": 21}' }] },
        ],
        tools,
        tool_choice: { type: 'none' },
      })
      expect(final.content).toHaveLength(1)
      expect(final.content[0]?.type).toBe('text')
      expect(final.content[0]?.type === 'text' && final.content[0].text.length).toBeGreaterThan(0)
      expect(['end_turn', 'max_tokens']).toContain(final.stop_reason)
      expect(final.usage.input_tokens).toBeGreaterThan(first.usage.input_tokens)
    })

    it('streams a call as a tool_use block with input_json_delta, which the SDK assembles into its input', async () => {
      const stream = anthropic.messages.stream({
        model,
        max_tokens: 80,
        messages: ask,
        tools,
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
      })
      const events: Anthropic.MessageStreamEvent[] = []
      stream.on('streamEvent', (e) => events.push(e))
      const final = await stream.finalMessage()
      expect(final.stop_reason).toBe('tool_use')
      const use = final.content[0]
      if (use?.type !== 'tool_use') throw new Error(`no tool_use block: ${JSON.stringify(final.content)}`)
      expect(WeatherArgs.safeParse(use.input).success).toBe(true)
      const start = events.find((e) => e.type === 'content_block_start')
      expect(start?.type === 'content_block_start' && start.content_block).toMatchObject({
        type: 'tool_use',
        id: use.id,
        name: 'get_weather',
        input: {},
      })
      expect(events.some((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')).toBe(true)
      expect(events.map((e) => e.type).slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop'])
    })

    it(
      'answers JSON that parses and validates through a ' + 'forced tool whose input schema is the JSON schema',
      async () => {
        const message = await anthropic.messages.create({
          model,
          max_tokens: 200,
          messages: [{ role: 'user', content: 'Describe a person.' }],
          tools: [{ name: 'record_person', description: 'Record the person described', input_schema: PERSON }],
          tool_choice: { type: 'tool', name: 'record_person' },
        })
        const use = message.content[0]
        if (use?.type !== 'tool_use') throw new Error(`no tool_use block: ${JSON.stringify(message.content)}`)
        expect(Person.safeParse(use.input).success).toBe(true)
      },
    )

    it(
      'answers text that parses and validates under ' + 'output_config’s json_schema format (structured outputs)',
      async () => {
        const message = await anthropic.messages.create({
          model,
          max_tokens: 200,
          messages: [{ role: 'user', content: 'Describe a person.' }],
          output_config: { format: { type: 'json_schema', schema: PERSON } },
        })
        expect(message.stop_reason).toBe('end_turn')
        const text = message.content[0]?.type === 'text' ? message.content[0].text : ''
        expect(Person.safeParse(JSON.parse(text)).success).toBe(true)
      },
    )

    it('refuses a tool_choice naming a tool it was not given, as invalid_request_error', async () => {
      const refused = anthropic.messages.create({
        model,
        max_tokens: 20,
        messages: ask,
        tools,
        tool_choice: { type: 'tool', name: 'get_time' },
      })
      await expect(refused).rejects.toMatchObject({
        status: 400,
        error: { error: { type: 'invalid_request_error', message: expect.stringContaining('get_time') } },
      })
    })
  })
})
