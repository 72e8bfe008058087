import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'
import type { AppEventData, AppEventName, AppInput } from '../../protocol'
import { backendCalls } from '../../test/backend-calls'
import { STORIES_260K, scratchDir } from '../../test/models'
import { renderChat } from '../../text/chat-template'
import { AppBackend } from './backend'

// chat.send's sampling and chat.count's counting, on the backend's embedded swarm serving stories260K (context 2048).
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
const events: { event: AppEventName; data: unknown }[] = []
const MODEL = 'stories260k'
const MESSAGES = [{ role: 'user' as const, content: 'Tell me a story about a cat.' }]

const { call, failure } = backendCalls(() => backend)

function seen<E extends AppEventName>(event: E): AppEventData<E>[] {
  return events.filter((e) => e.event === event).map((e) => e.data as AppEventData<E>)
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The answer's text, once chat.done came (a chat.error fails the test with its message). */
async function answer(input: AppInput<'chat.send'>): Promise<string> {
  await call('chat.send', input)
  const ended = () =>
    seen('chat.done').some((d) => d.chatId === input.chatId) ||
    seen('chat.error').some((e) => e.chatId === input.chatId)
  await until(`${input.chatId} to end`, ended)
  expect(seen('chat.error').filter((e) => e.chatId === input.chatId)).toEqual([])
  return seen('chat.token')
    .filter((t) => t.chatId === input.chatId)
    .map((t) => t.text)
    .join('')
}

describe('chat sampling and context on the embedded swarm', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-chat-'))
    backend = await AppBackend.start({
      dataDir: join(dir, 'app'),
      trackerUrl: null,
      defaultModels: [STORIES_260K],
      threads: 1,
    })
    backend.onEvent((event, data) => events.push({ event, data }))
    await call('hosting.start', { modelId: MODEL, blocks: [0, 5] })
    await until('serving', () => seen('hosting.status').some((s) => s.phase === 'serving'), 120_000)
  })
  afterAll(async () => {
    await backend?.close()
    await cleanup()
  })

  it('counts a conversation’s prompt tokens with the model’s template and says its context length', async () => {
    const reference = await SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())
    try {
      const expected = renderChat(await reference.tokenizer(MODEL), MESSAGES).length
      expect(await call('chat.count', { modelId: MODEL, messages: MESSAGES })).toEqual({
        promptTokens: expected,
        contextLength: 2048,
      })
    } finally {
      reference.close()
    }
    const longer = await call('chat.count', {
      modelId: MODEL,
      messages: [{ role: 'system', content: 'You tell short stories.' }, ...MESSAGES],
    })
    expect(longer.promptTokens).toBeGreaterThan(0)
    // Bounded input: a conversation past 256,000 characters is refused, not tokenized.
    const huge = await failure('chat.count', {
      modelId: MODEL,
      messages: [{ role: 'user', content: 'a'.repeat(256_001) }],
    })
    expect(huge).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/256000 characters/) })
  })

  it(
    'refuses, before any host sees it, a prompt whose tokens plus max tokens exceed the context, naming the ' +
      'counts',
    async () => {
      const messages = [{ role: 'user' as const, content: 'The cat sat on the mat. '.repeat(400) }]
      const { promptTokens } = await call('chat.count', { modelId: MODEL, messages })
      expect(promptTokens).toBeGreaterThan(2048)
      const refused = await failure('chat.send', { chatId: 'too-long', modelId: MODEL, messages, maxTokens: 64 })
      expect(refused.code).toBe('context_exceeded')
      expect(refused.message).toContain(`the prompt is ${promptTokens} tokens`)
      expect(refused.message).toContain('context of 2048 tokens')
      expect(seen('chat.route').some((r) => r.chatId === 'too-long')).toBe(false)
      // A prompt that fits only without its max tokens is refused too; the chat id is free again after.
      const short = await call('chat.count', { modelId: MODEL, messages: MESSAGES })
      const over = await failure('chat.send', {
        chatId: 'too-long',
        modelId: MODEL,
        messages: MESSAGES,
        maxTokens: 2049 - short.promptTokens,
      })
      expect(over.message).toContain(
        `${short.promptTokens + 2049 - short.promptTokens} > ${MODEL}'s context of 2048 tokens`,
      )
      expect(await answer({ chatId: 'too-long', modelId: MODEL, messages: MESSAGES, maxTokens: 8 })).not.toBe('')
    },
  )

  it(
    'samples at temperature > 0: a fixed seed repeats its answer, another seed gives another, top-p/top-k/repeat ' +
      'penalty are taken',
    async () => {
      const sampling = {
        modelId: MODEL,
        messages: MESSAGES,
        maxTokens: 32,
        temperature: 1,
        topP: 0.95,
        topK: 40,
        repeatPenalty: 1.1,
      }
      const first = await answer({ ...sampling, chatId: 'seed-1a', seed: 1 })
      const again = await answer({ ...sampling, chatId: 'seed-1b', seed: 1 })
      const other = await answer({ ...sampling, chatId: 'seed-2', seed: 2 })
      expect(first.length).toBeGreaterThan(0)
      expect(again).toBe(first)
      expect(other).not.toBe(first)
      // Without a seed every answer draws a fresh one: three answers are not all the same.
      const unseeded = [
        await answer({ ...sampling, chatId: 'fresh-1' }),
        await answer({ ...sampling, chatId: 'fresh-2' }),
        await answer({ ...sampling, chatId: 'fresh-3' }),
      ]
      expect(new Set(unseeded).size).toBeGreaterThan(1)
    },
  )

  it(
    'keeps a chat’s session between its answers: the next answer sends only its new turn and answers as a new chat ' +
      'does',
    async () => {
      const greedy = { modelId: MODEL, maxTokens: 16, temperature: 0 }
      const firstText = await answer({ ...greedy, chatId: 'kept', messages: MESSAGES })
      const messages = [
        ...MESSAGES,
        { role: 'assistant' as const, content: firstText },
        { role: 'user' as const, content: 'And then?' },
      ]
      const tokensBefore = seen('chat.token').length
      await call('chat.send', { ...greedy, chatId: 'kept', messages })
      await until('the second answer', () => seen('chat.done').filter((d) => d.chatId === 'kept').length === 2)
      const second = seen('chat.done').filter((d) => d.chatId === 'kept')[1]
      // the first turn's prompt and answer stayed on the hops: a stories260K answer re-tokenizes as it was generated
      expect(second?.cachedTokens).toBeGreaterThan(0)
      expect(second?.cachedTokens).toBeLessThan(second?.promptTokens ?? 0)
      const secondText = seen('chat.token')
        .slice(tokensBefore)
        .filter((t) => t.chatId === 'kept')
        .map((t) => t.text)
        .join('')
      expect(await answer({ ...greedy, chatId: 'kept-fresh', messages })).toBe(secondText)
      expect(seen('chat.done').find((d) => d.chatId === 'kept-fresh')?.cachedTokens).toBe(0)
    },
  )

  it(
    'takes min-p (1 keeps only the likeliest token: greedy at any temperature) and ends an answer at a stop ' +
      'sequence, leaving it out',
    async () => {
      const base = { modelId: MODEL, messages: MESSAGES, maxTokens: 32 }
      const greedy = await answer({ ...base, chatId: 'min-p-0', temperature: 0 })
      expect(await answer({ ...base, chatId: 'min-p-1', temperature: 1.5, minP: 1, seed: 9 })).toBe(greedy)
      // A word well into the greedy answer (where it first shows, even inside another): the same answer, cut there.
      const word = greedy.split(/\s+/).find((w) => w.length >= 3 && greedy.indexOf(w) > 10) ?? ''
      expect(word).not.toBe('')
      const cut = await answer({ ...base, chatId: 'stop', temperature: 0, stop: [word, 'never seen'] })
      expect(cut).toBe(greedy.slice(0, greedy.indexOf(word)))
      expect(seen('chat.done').find((d) => d.chatId === 'stop')?.finishReason).toBe('stop')
      for (const [field, value, says] of [
        ['minP', 2, 'minP must be a number from 0 to 1'],
        ['stop', ['a', 'b', 'c', 'd', 'e'], 'up to 4 stop sequences'],
        ['stop', [''], 'a stop sequence is not empty'],
      ] as const) {
        const refused = await failure('chat.send', { ...base, chatId: 'bad', [field]: value })
        expect(refused.message).toContain(says)
      }
    },
  )

  it('refuses sampling out of range with a typed error naming the field and its range', async () => {
    const base = { chatId: 'bad', modelId: MODEL, messages: MESSAGES }
    for (const [field, value, says] of [
      ['temperature', 3, 'temperature must be a number from 0 to 2'],
      ['topP', 0, 'topP must be a number from 0.01 to 1'],
      ['topK', 1.5, 'topK must be a whole number from 0 to 1000'],
      ['repeatPenalty', 9, 'repeatPenalty must be a number from 0.5 to 2'],
      ['seed', -1, 'seed must be a whole number from 0 to 4294967295'],
      ['maxTokens', 0, 'maxTokens must be a whole number from 1 to 4096'],
    ] as const) {
      const refused = await failure('chat.send', { ...base, [field]: value })
      expect(refused.code).toBe('bad_request')
      expect(refused.message).toContain(`${field}: ${says}`)
    }
  })
})
