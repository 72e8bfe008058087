// Tool calls and JSON answers through the official `openai` client against a real tracker and two real hosts on
// stories260K: a random-ish tiny model, so every well-formed call or JSON answer here is the last hop's grammar at
// work (openai-sampling.test.ts: the remaining sampling parameters).
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { SwarmClient } from '../../client/swarm-client'
import { parseGbnf } from '../../host/grammar/gbnf'
import { GrammarState } from '../../host/grammar/matcher'
import { NodeIdentity } from '../../identity/keys'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type InProcessSwarm, startGatewaySwarm } from '../../test/programs'
import { GrammarBuilder } from './json-schema-grammar'

const ADMIN = 'admin-token-for-tool-tests'
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let openai: OpenAI
let apiKey = ''
let model = ''

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 3 },
    home: {
      type: 'object',
      properties: { town: { type: 'string', maxLength: 8 } },
      required: ['town'],
      additionalProperties: false,
    },
    alive: { type: 'boolean' },
  },
  required: ['name', 'age', 'alive', 'home'],
  additionalProperties: false,
}
// The same schema as the test's own check: strict, no other keys.
const Person = z.strictObject({
  name: z.string().max(12),
  age: z.number().int(),
  pets: z
    .array(z.enum(['cat', 'dog']))
    .max(3)
    .optional(),
  home: z.strictObject({ town: z.string().max(8) }),
  alive: z.boolean(),
})
const WEATHER_TOOL: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a town',
    parameters: {
      type: 'object',
      properties: { town: { type: 'string', maxLength: 10 }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['town', 'unit'],
      additionalProperties: false,
    },
  },
}
const WeatherArgs = z.strictObject({ town: z.string().max(10), unit: z.enum(['celsius', 'fahrenheit']) })
const ASK = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]

describe('OpenAI tools and JSON answers on a real swarm', () => {
  beforeAll(async () => {
    let dir = ''
    ;({ dir, cleanup } = await scratchDir())
    ;({ swarm, apiKey } = await startGatewaySwarm(
      dir,
      STORIES_260K,
      { adminToken: ADMIN, requestsPerMinute: 200 },
      'tools',
    ))
    openai = new OpenAI({ apiKey, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 })
    model = swarm.manifest.modelId
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
  })

  it('answers a json_schema response that parses and validates, the same for the same seed', async () => {
    const ask = () =>
      openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Describe a person.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
        max_tokens: 200,
        temperature: 1,
        seed: 11,
      })
    const answer = await ask()
    const content = answer.choices[0]?.message.content ?? ''
    expect(answer.choices[0]?.finish_reason).toBe('stop')
    expect(Person.safeParse(JSON.parse(content)).success).toBe(true)
    expect((await ask()).choices[0]?.message.content).toBe(content)
  })

  it('streams a json_schema answer that parses and validates', async () => {
    const stream = await openai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Describe a person.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
      max_tokens: 200,
      temperature: 0.7,
      seed: 5,
      stream: true,
    })
    let text = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe('stop')
    expect(Person.safeParse(JSON.parse(text)).success).toBe(true)
  })

  it(
    'holds a json_object answer to JSON at every token (stories260K never closes its object: it is cut at ' +
      'max_tokens)',
    async () => {
      const answer = await openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Give me JSON.' }],
        response_format: { type: 'json_object' },
        max_tokens: 40,
        temperature: 1,
        seed: 7,
      })
      const text = answer.choices[0]?.message.content ?? ''
      const any = new GrammarBuilder('response_format')
      const json = GrammarState.start(parseGbnf(any.rules(any.anyObject())))
      expect(text.startsWith('{')).toBe(true)
      expect(json.advance(text)).toBeDefined()
      expect(answer.choices[0]?.finish_reason).toBe('length')
    },
  )

  it('refuses a schema keyword outside the supported subset with a 400 naming it', async () => {
    const refused = openai.chat.completions.create({
      model,
      messages: ASK,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a' } } },
    })
    await expect(refused).rejects.toMatchObject({
      status: 400,
      code: 'unsupported_schema',
      param: 'response_format',
      message: expect.stringContaining('"pattern"'),
    })
  })

  it('makes a required tool call, takes its result back with role tool, and gives a final answer', async () => {
    const tools = [WEATHER_TOOL]
    const first = await openai.chat.completions.create({
      model,
      messages: ASK,
      tools,
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_tokens: 80,
      temperature: 1,
      seed: 3,
    })
    const choice = first.choices[0]
    expect(choice?.finish_reason).toBe('tool_calls')
    expect(choice?.message.content).toBeNull()
    const call = choice?.message.tool_calls?.[0]
    if (call?.type !== 'function') throw new Error('no function call')
    expect(call.id).toMatch(/^call_/)
    expect(call.function.name).toBe('get_weather')
    expect(WeatherArgs.safeParse(JSON.parse(call.function.arguments)).success).toBe(true)

    const final = await openai.chat.completions.create({
      model,
      messages: [
        ...ASK,
        { role: 'assistant', tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' },
      ],
      tools,
      max_tokens: 24,
      temperature: 0.8,
      seed: 4,
    })
    expect(final.choices[0]?.message.tool_calls).toBeUndefined()
    expect(final.choices[0]?.message.content?.length).toBeGreaterThan(0)
    expect(['stop', 'length']).toContain(final.choices[0]?.finish_reason)
    // the tool's result is in the prompt: it is longer than the question with the call alone
    expect(final.usage?.prompt_tokens).toBeGreaterThan(first.usage?.prompt_tokens ?? 0)
  })

  it('streams a named tool call as tool-call deltas that assemble into valid arguments', async () => {
    const stream = await openai.chat.completions.create({
      model,
      messages: ASK,
      tools: [
        WEATHER_TOOL,
        { type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} } } },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 80,
      temperature: 1,
      seed: 9,
      stream: true,
    })
    const calls: { id?: string; name?: string; arguments: string }[] = []
    let finish: string | null = null
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta.tool_calls ?? []) {
        calls[d.index] ??= { arguments: '' }
        const c = calls[d.index] as { id?: string; name?: string; arguments: string }
        if (d.id) c.id = d.id
        if (d.function?.name) c.name = d.function.name
        c.arguments += d.function?.arguments ?? ''
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe('tool_calls')
    expect(calls.length).toBe(1)
    for (const c of calls) {
      expect(c.name).toBe('get_weather')
      expect(c.id).toMatch(/^call_/)
      expect(WeatherArgs.safeParse(JSON.parse(c.arguments)).success).toBe(true)
    }
  })

  it(
    'answers text under tool_choice none, and under auto ' + 'with a json_schema format either JSON or a call',
    async () => {
      const none = await openai.chat.completions.create({
        model,
        messages: ASK,
        tools: [WEATHER_TOOL],
        tool_choice: 'none',
        max_tokens: 12,
        temperature: 1,
        seed: 8,
      })
      expect(none.choices[0]?.message.tool_calls).toBeUndefined()
      expect(none.choices[0]?.message.content?.length).toBeGreaterThan(0)
      const auto = await openai.chat.completions.create({
        model,
        messages: ASK,
        tools: [WEATHER_TOOL],
        parallel_tool_calls: false,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
        max_tokens: 200,
        temperature: 1,
        seed: 12,
      })
      const message = auto.choices[0]?.message
      if (message?.tool_calls !== undefined) {
        expect(auto.choices[0]?.finish_reason).toBe('tool_calls')
        expect(
          WeatherArgs.safeParse(
            JSON.parse(message.tool_calls[0]?.type === 'function' ? message.tool_calls[0].function.arguments : ''),
          ).success,
        ).toBe(true)
      } else expect(Person.safeParse(JSON.parse(message?.content ?? '')).success).toBe(true)
    },
  )

  it('a host refuses a malformed grammar (bad_grammar) and an oversized one (bad_frame) before any work', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const run = client.generate({
        modelId: model,
        prompt: 'Once',
        maxTokens: 4,
        sampling: { temperature: 0, grammar: 'root ::= "a" undefined-rule' },
      })
      await expect(run.next()).rejects.toMatchObject({
        code: 'bad_grammar',
        message: expect.stringContaining('undefined-rule'),
      })
      const oversized = client.generate({
        modelId: model,
        prompt: 'Once',
        maxTokens: 4,
        sampling: { temperature: 0, grammar: `root ::= "${'a'.repeat(17_000)}"` },
      })
      await expect(oversized.next()).rejects.toMatchObject({
        code: 'bad_frame',
        message: expect.stringContaining('grammar'),
      })
    } finally {
      await client.close()
    }
  })

  it('keeps the grammar’s place across a failover of the last hop: the answer equals the one without', async () => {
    const ask = {
      model,
      messages: [{ role: 'user' as const, content: 'Describe a person.' }],
      max_tokens: 200,
      temperature: 1,
      seed: 31,
    }
    const format = { type: 'json_schema' as const, json_schema: { name: 'person', schema: PERSON } }
    const expected = (await openai.chat.completions.create({ ...ask, response_format: format })).choices[0]?.message
      .content
    const spare = await swarm.addHost([3, 5])
    const stream = await openai.chat.completions.create({ ...ask, response_format: format, stream: true })
    let text = ''
    let killed = ''
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      if (killed !== '') continue
      const last = swarm.hosts.find((h) => h !== spare && h.state.blocks?.[0] === 3) ?? spare
      const onRoute = last.activeSessions > 0 ? last : spare
      killed = onRoute.hostId
      await onRoute.stop(0)
    }
    expect(killed).not.toBe('')
    expect(text).toBe(expected)
    expect(Person.safeParse(JSON.parse(text)).success).toBe(true)
  })
})
