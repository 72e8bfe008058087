// The sampling parameters beyond temperature and top_p through the official `openai` client against a real tracker
// and two real hosts on stories260K: log-probabilities, several choices, a frequency penalty.
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type InProcessSwarm, startGatewaySwarm } from '../../test/programs'
import { consumerAccount } from '../ledger/accounts'

const ADMIN = 'admin-token-for-tool-tests'
let cleanup: () => Promise<void> = async () => {}
let swarm: InProcessSwarm
let openai: OpenAI
let apiKey = ''
let accountId = ''
let model = ''

const ASK = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]

async function balance(): Promise<number> {
  return swarm.tracker.store.ledger.balance(consumerAccount(accountId))
}

describe('OpenAI sampling parameters on a real swarm', () => {
  beforeAll(async () => {
    let dir = ''
    ;({ dir, cleanup } = await scratchDir())
    ;({ swarm, apiKey, accountId } = await startGatewaySwarm(
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

  it('returns log-probabilities: each ≤ 0, its alternatives sorted, the tokens spelling the answer', async () => {
    const answer = await openai.chat.completions.create({
      model,
      messages: ASK,
      max_tokens: 12,
      temperature: 1,
      seed: 2,
      logprobs: true,
      top_logprobs: 3,
    })
    const entries = answer.choices[0]?.logprobs?.content ?? []
    expect(entries.length).toBe(answer.usage?.completion_tokens)
    expect(entries.map((e) => e.token).join('')).toBe(answer.choices[0]?.message.content)
    for (const e of entries) {
      expect(e.logprob).toBeLessThanOrEqual(0)
      expect(e.top_logprobs.length).toBe(3)
      const tops = e.top_logprobs.map((t) => t.logprob)
      expect(tops).toEqual([...tops].sort((a, b) => b - a))
      expect(e.logprob).toBeLessThanOrEqual((tops[0] ?? 0) + 1e-6)
    }
    const legacy = await openai.completions.create({
      model,
      prompt: 'Once upon a time',
      max_tokens: 8,
      temperature: 0,
      logprobs: 2,
    })
    const lp = legacy.choices[0]?.logprobs
    expect(lp?.tokens?.join('')).toBe(legacy.choices[0]?.text)
    expect(lp?.token_logprobs?.every((l) => l <= 0)).toBe(true)
    expect(lp?.top_logprobs?.every((t) => Object.keys(t).length >= 1)).toBe(true)
    expect(lp?.text_offset).toEqual([...(lp?.text_offset ?? [])].sort((a, b) => a - b))
  })

  it('gives n = 2 choices at temperature 1, both paid, and streams them with usage summed', async () => {
    const before = await balance()
    const one = await openai.chat.completions.create({ model, messages: ASK, max_tokens: 10, temperature: 1, seed: 21 })
    const afterOne = await balance()
    const two = await openai.chat.completions.create({
      model,
      messages: ASK,
      max_tokens: 10,
      temperature: 1,
      seed: 21,
      n: 2,
    })
    const afterTwo = await balance()
    expect(two.choices.map((c) => c.index)).toEqual([0, 1])
    // choice 0 draws with the seed, choice 1 with the next: the first is the single answer's
    expect(two.choices[0]?.message.content).toBe(one.choices[0]?.message.content)
    // usage counts both choices' tokens; the prompt once, as OpenAI does
    expect(two.usage?.completion_tokens).toBeGreaterThan(one.usage?.completion_tokens ?? 0)
    expect(two.usage?.prompt_tokens).toBe(one.usage?.prompt_tokens)
    expect(before - afterOne).toBeGreaterThan(0)
    expect(afterOne - afterTwo).toBeGreaterThan(before - afterOne)

    const stream = await openai.chat.completions.create({
      model,
      messages: ASK,
      max_tokens: 10,
      temperature: 1,
      seed: 21,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    })
    const texts = ['', '']
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      for (const c of chunk.choices) texts[c.index] += c.delta.content ?? ''
      usage = chunk.usage ?? usage
    }
    expect(texts).toEqual(two.choices.map((c) => c.message.content))
    expect(usage?.completion_tokens).toBe(two.usage?.completion_tokens)
  })

  it('repeats itself less under a frequency penalty', async () => {
    const distinct = async (frequency_penalty: number) => {
      const r = await openai.completions.create({
        model,
        prompt: 'Once upon a time',
        max_tokens: 40,
        temperature: 0,
        frequency_penalty,
        logprobs: 0,
      })
      const tokens = r.choices[0]?.logprobs?.tokens ?? []
      return new Set(tokens).size / tokens.length
    }
    const plain = await distinct(0)
    const penalized = await distinct(2)
    expect(penalized).toBeGreaterThan(plain)
  })
})
