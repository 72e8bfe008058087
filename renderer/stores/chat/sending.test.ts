import { describe, expect, it } from 'vitest'
import type { ChatMessage, ChatSummary } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { keptConversations } from '../../../test/renderer/conversation-fixtures'
import { type FakeHandlers, fakeBridge } from '../../../test/renderer/fake-bridge'
import { tinyModel } from '../../../test/renderer/hosting-fixtures'
import { createChatStore } from './store'

/** A backend whose model has a 2048-token context, and whose prompts take a token per word. */
const countWords = ({ messages }: { messages: ChatMessage[] }) => ({
  promptTokens: messages.reduce((n, m) => n + m.content.split(/\s+/).length, 0),
  contextLength: 2048,
})

const DONE: Omit<ChatSummary, 'chatId'> = {
  promptTokens: 3,
  completionTokens: 1,
  finishReason: 'stop',
  tokensPerSecond: 1,
  route: [],
  chargedMicro: 0,
}

async function setup(handlers: FakeHandlers = {}) {
  const backend = keptConversations()
  const bridge = fakeBridge({
    'models.list': () => ({ models: [tinyModel] }),
    'chat.send': ({ chatId }) => ({ chatId }),
    'chat.count': countWords,
    ...backend.handlers,
    ...handlers,
  })
  let n = 0
  const store = createChatStore(bridge, { newId: () => `id${++n}`, now: () => n })
  store.getState().subscribe()
  await store.getState().loadModels()
  const chatId = store.getState().newConversation()
  const sends = () =>
    bridge.calls.filter((c) => c.method === 'chat.send').map((c) => c.input as Record<string, unknown>)
  const thread = () => store.getState().conversations.find((c) => c.id === chatId)?.messages ?? []
  return { bridge, store, chatId, sends, thread, kept: backend.kept }
}

describe('chat store: sampling, context and edits', () => {
  it('sends the conversation’s system prompt and sampling, and keeps them with the conversation', async () => {
    const { store, chatId, sends, kept } = await setup()
    store.getState().setSettings({ systemPrompt: 'You tell stories.', temperature: 1.2, seed: 7 })
    expect(await store.getState().send('A cat')).toBe(true)
    expect(sends()).toEqual([
      {
        chatId,
        modelId: 'stories260k',
        messages: [
          { role: 'system', content: 'You tell stories.' },
          { role: 'user', content: 'A cat' },
        ],
        maxTokens: 64,
        temperature: 1.2,
        topP: 0.95,
        topK: 40,
        minP: 0.05,
        repeatPenalty: 1,
        seed: 7,
      },
    ])
    await new Promise((r) => setTimeout(r, 0))
    expect(kept.get(chatId)?.settings).toMatchObject({ systemPrompt: 'You tell stories.', temperature: 1.2, seed: 7 })
    // Another conversation starts from the defaults.
    store.getState().newConversation()
    await store.getState().send('A dog')
    expect(sends().at(-1)).toMatchObject({ messages: [{ role: 'user', content: 'A dog' }], temperature: 0.7 })
  })

  it('regenerates with no seed (the backend draws a fresh one) unless the conversation fixed one', async () => {
    const { bridge, store, chatId, sends } = await setup()
    await store.getState().send('A cat')
    bridge.emit('chat.done', {
      chatId,
      promptTokens: 3,
      completionTokens: 1,
      finishReason: 'stop',
      tokensPerSecond: 1,
      route: [],
      chargedMicro: 0,
    })
    await store.getState().regenerate()
    expect(sends().map((s) => 'seed' in s)).toEqual([false, false])
    bridge.emit('chat.done', {
      chatId,
      promptTokens: 3,
      completionTokens: 1,
      finishReason: 'stop',
      tokensPerSecond: 1,
      route: [],
      chargedMicro: 0,
    })
    store.getState().setSettings({ seed: 3 })
    await store.getState().regenerate()
    expect(sends().at(-1)?.seed).toBe(3)
  })

  it(
    'caps max tokens to what the context leaves after the prompt, and refuses only a prompt that fills the context ' +
      'alone, naming its count, adding no turn',
    async () => {
      const { store, sends, thread } = await setup()
      const words = (n: number) => Array.from({ length: n }, () => 'word').join(' ')
      store.getState().setMaxTokens(4096)
      expect(await store.getState().send('Hi')).toBe(true)
      expect(sends().at(-1)?.maxTokens).toBe(2047)
      store.getState().newConversation()
      store.getState().setMaxTokens(64)
      expect(await store.getState().send(words(2000))).toBe(true)
      expect(sends().at(-1)?.maxTokens).toBe(48)
      store.getState().newConversation()
      expect(await store.getState().send(words(2048))).toBe(false)
      expect(sends()).toHaveLength(2)
      expect(store.getState().composerError).toMatchObject({
        code: 'context_exceeded',
        message: expect.stringContaining("This prompt is 2048 tokens, past the model's context of 2048 tokens"),
      })
      expect(thread()).toHaveLength(2)
      // The refusal was for that text: changing the draft takes it away.
      store.getState().draftChanged()
      expect(store.getState().composerError).toBeNull()
    },
  )

  it('refuses before sending turns the backend will not count (too many characters), in its words', async () => {
    const { store, sends, thread } = await setup({
      'chat.count': () => {
        throw new NeuronError(
          'bad_request',
          "chat.count: messages: a chat's turns take up to 256000 characters all together; start a new chat or " +
            'shorten it',
        )
      },
    })
    expect(await store.getState().send('A very long paste')).toBe(false)
    expect([sends(), thread()]).toEqual([[], []])
    expect(store.getState().composerError?.message).toMatch(/up to 256000 characters/)
  })

  it('sends anyway when the count fails for another reason: chat.send checks again and says what failed', async () => {
    const { store, sends } = await setup({
      'chat.count': () => {
        throw new NeuronError('tracker_unreachable', 'lost the tracker')
      },
    })
    expect(await store.getState().send('A cat')).toBe(true)
    expect(sends()).toHaveLength(1)
  })

  it('counts the prompt as the user types; an older count arriving late does not replace a newer one', async () => {
    const answers: ((value: { promptTokens: number; contextLength: number }) => void)[] = []
    const { store, chatId } = await setup({ 'chat.count': () => new Promise((resolve) => answers.push(resolve)) })
    const first = store.getState().countPrompt('one')
    const second = store.getState().countPrompt('one two')
    answers[1]?.({ promptTokens: 2, contextLength: 2048 })
    answers[0]?.({ promptTokens: 1, contextLength: 2048 })
    await Promise.all([first, second])
    expect(store.getState().promptCount).toEqual({ promptTokens: 2, contextLength: 2048, conversationId: chatId })
  })

  it('will not send while a field holds an invalid value, and says which', async () => {
    const { store, sends } = await setup()
    store.getState().setFieldError('maxTokens', 'Max tokens takes a whole number from 1 to 4096; it is empty.')
    expect(await store.getState().send('A cat')).toBe(false)
    expect(store.getState().composerError).toEqual({
      code: 'invalid_field',
      message: 'Max tokens takes a whole number from 1 to 4096; it is empty. Fix it, then send again.',
    })
    store.getState().setFieldError('maxTokens', null)
    expect(store.getState().composerError).toBeNull()
    expect(await store.getState().send('A cat')).toBe(true)
    expect(sends()).toHaveLength(1)
  })

  it('edits a user turn and asks again from there, dropping what came after', async () => {
    const { bridge, store, chatId, sends, thread } = await setup()
    await store.getState().send('A cat')
    bridge.emit('chat.token', { chatId, text: 'Meow', token: 0 })
    bridge.emit('chat.done', {
      chatId,
      promptTokens: 3,
      completionTokens: 1,
      finishReason: 'stop',
      tokensPerSecond: 1,
      route: [],
      chargedMicro: 0,
    })
    const userId = thread()[0]?.id ?? ''
    expect(await store.getState().resend(userId, 'A dog')).toBe(true)
    expect(thread().map((m) => [m.role, m.content, m.status])).toEqual([
      ['user', 'A dog', undefined],
      ['assistant', '', 'streaming'],
    ])
    expect(sends().at(-1)?.messages).toEqual([{ role: 'user', content: 'A dog' }])
  })

  it('keeps the answers a regenerate replaces, pages through them, and goes on from the one shown', async () => {
    const { bridge, store, chatId, sends, thread, kept } = await setup()
    const finish = (text: string) => {
      bridge.emit('chat.token', { chatId, text, token: 0 })
      bridge.emit('chat.done', { ...DONE, chatId })
    }
    await store.getState().send('A cat')
    finish('Meow')
    await store.getState().regenerate()
    finish('Purr')
    await store.getState().regenerate()
    finish('Hiss')
    const answerId = () => thread()[1]?.id ?? ''
    expect(thread()).toHaveLength(2)
    expect(thread()[1]).toMatchObject({ content: 'Hiss', chosen: 2 })
    store.getState().showAnswer(answerId(), 1)
    expect(thread()[1]).toMatchObject({ content: 'Purr', status: 'done', chosen: 1 })
    await new Promise((r) => setTimeout(r, 0))
    expect(kept.get(chatId)?.messages[1]?.alternatives?.map((a) => a.content)).toEqual(['Meow', 'Hiss'])
    await store.getState().send('And then?')
    expect(sends().at(-1)?.messages).toEqual([
      { role: 'user', content: 'A cat' },
      { role: 'assistant', content: 'Purr' },
      { role: 'user', content: 'And then?' },
    ])
    // No paging while an answer streams.
    store.getState().showAnswer(answerId(), 0)
    expect(thread()[1]?.content).toBe('Purr')
  })

  it('deletes one turn, puts it back on undo, and goes on without it once deleted', async () => {
    const { bridge, store, chatId, sends, thread, kept } = await setup()
    await store.getState().send('A cat')
    bridge.emit('chat.token', { chatId, text: 'Meow', token: 0 })
    bridge.emit('chat.done', { ...DONE, chatId })
    const [question, answer] = thread()
    store.getState().deleteMessage(question?.id ?? '')
    expect(thread().map((m) => m.content)).toEqual(['Meow'])
    await new Promise((r) => setTimeout(r, 0))
    expect(kept.get(chatId)?.messages.map((m) => m.content)).toEqual(['Meow'])
    store.getState().undoDelete()
    expect(thread()).toEqual([question, answer])
    store.getState().deleteMessage(answer?.id ?? '')
    expect(store.getState().deletedMessage).toMatchObject({ conversationId: chatId, index: 1 })
    await store.getState().send('A dog')
    expect(sends().at(-1)?.messages).toEqual([
      { role: 'user', content: 'A cat' },
      { role: 'user', content: 'A dog' },
    ])
    // Sent since: the deleted answer can no longer be put back, and no turn is deleted while one streams.
    expect(store.getState().deletedMessage).toBeNull()
    store.getState().deleteMessage(question?.id ?? '')
    expect(thread()).toHaveLength(3)
  })

  it('drops an empty chat once the user makes another, but not one whose first turn is being sent', async () => {
    const counts: (() => void)[] = []
    const { store, chatId } = await setup({
      'chat.count': (input) => new Promise((resolve) => counts.push(() => resolve(countWords(input)))),
    })
    const sent = store.getState().send('A cat')
    store.getState().newConversation()
    counts[0]?.()
    expect(await sent).toBe(true)
    const ids = () => store.getState().conversations.map((c) => c.id)
    expect(ids()).toContain(chatId)
    const empty = store.getState().activeId
    store.getState().newConversation()
    expect(ids()).not.toContain(empty)
    store.getState().select(chatId)
    expect(ids()).toEqual([chatId])
  })

  it('renames a conversation, ignoring a blank name', async () => {
    const { store, chatId } = await setup()
    store.getState().rename(chatId, '  Cat   stories ')
    store.getState().rename(chatId, '   ')
    expect(store.getState().conversations[0]?.title).toBe('Cat stories')
  })
})
