import { describe, expect, it } from 'vitest'
import type { ChatSummary } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { keptConversations } from '../../../test/renderer/conversation-fixtures'
import { type FakeHandlers, fakeBridge } from '../../../test/renderer/fake-bridge'
import { tinyModel } from '../../../test/renderer/hosting-fixtures'
import { createChatStore, randomChatId } from './store'

const done = (chatId: string): ChatSummary => ({
  chatId,
  promptTokens: 5,
  completionTokens: 2,
  finishReason: 'stop',
  tokensPerSecond: 12.5,
  route: [{ hostId: '0123456789abcdef0123', blocks: [0, 6], medianMs: 4.2 }],
  chargedMicro: 30,
})

function setup(handlers: FakeHandlers = {}) {
  const backend = keptConversations()
  const bridge = fakeBridge({
    'models.list': () => ({ models: [tinyModel] }),
    'chat.send': ({ chatId }) => ({ chatId }),
    'chat.count': () => ({ promptTokens: 5, contextLength: 2048 }),
    'chat.stop': () => ({}),
    ...backend.handlers,
    ...handlers,
  })
  let n = 0
  const store = createChatStore(bridge, { newId: () => `id${++n}`, now: () => n })
  store.getState().subscribe()
  return { bridge, store, kept: backend.kept }
}

const thread = (store: ReturnType<typeof setup>['store']) =>
  store.getState().conversations.find((c) => c.id === store.getState().activeId)?.messages ?? []

describe('chat store', () => {
  it('sends the conversation with the picked model and shows the user turn and a streaming answer', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const chatId = store.getState().newConversation()
    await store.getState().send('Once upon a time')
    expect(thread(store).map((m) => [m.role, m.content, m.status])).toEqual([
      ['user', 'Once upon a time', undefined],
      ['assistant', '', 'streaming'],
    ])
    expect(bridge.calls.at(-1)).toEqual({
      method: 'chat.send',
      input: {
        chatId,
        modelId: 'stories260k',
        messages: [{ role: 'user', content: 'Once upon a time' }],
        maxTokens: 64,
        temperature: 0.7,
        topP: 0.95,
        topK: 40,
        minP: 0.05,
        repeatPenalty: 1,
      },
    })
    expect(store.getState().conversations[0]?.title).toBe('Once upon a time')
  })

  it('appends streamed tokens to the right conversation and stores route and summary when done', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const first = store.getState().newConversation()
    await store.getState().send('Hello')
    const second = store.getState().newConversation()
    await store.getState().send('Other')
    bridge.emit('chat.token', { chatId: first, text: ' there', token: 0 })
    bridge.emit('chat.token', { chatId: first, text: ' friend', token: 1 })
    bridge.emit('chat.done', done(first))
    const answerOf = (id: string) =>
      store
        .getState()
        .conversations.find((c) => c.id === id)
        ?.messages.at(-1)
    expect(answerOf(first)).toMatchObject({
      content: ' there friend',
      status: 'done',
      route: done(first).route,
      summary: { tokensPerSecond: 12.5 },
    })
    expect(answerOf(second)).toMatchObject({ content: '', status: 'streaming' })
  })

  it('marks the answer failed with the backend message text on chat.error', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const chatId = store.getState().newConversation()
    await store.getState().send('Hi')
    bridge.emit('chat.error', {
      chatId,
      error: { code: 'internal', message: 'host 0123456789 dropped the session at block 4' },
    })
    expect(thread(store).at(-1)).toMatchObject({
      status: 'error',
      error: { message: 'host 0123456789 dropped the session at block 4' },
    })
  })

  it('explains no_route and insufficient_credits in words when chat.send is refused', async () => {
    const { store } = setup({
      'chat.send': () => {
        throw new NeuronError('no_route', 'blocks 3..5 of stories260k have no ready host')
      },
    })
    await store.getState().loadModels()
    store.getState().newConversation()
    await store.getState().send('Hi')
    expect(thread(store).at(-1)?.error).toMatchObject({
      code: 'no_route',
      message: expect.stringMatching(/^No hosts serve every block of this model right now/),
    })
  })

  it('regenerate drops the last answer and asks again with the same turns', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const chatId = store.getState().newConversation()
    await store.getState().send('Tell me a story')
    bridge.emit('chat.token', { chatId, text: 'Once', token: 0 })
    bridge.emit('chat.done', done(chatId))
    await store.getState().regenerate()
    expect(thread(store).map((m) => [m.role, m.content, m.status])).toEqual([
      ['user', 'Tell me a story', undefined],
      ['assistant', '', 'streaming'],
    ])
    const sends = bridge.calls.filter((c) => c.method === 'chat.send')
    expect(sends).toHaveLength(2)
    expect(sends[1]?.input).toMatchObject({ messages: [{ role: 'user', content: 'Tell me a story' }] })
  })

  it('stop asks the backend to stop this conversation', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const chatId = store.getState().newConversation()
    await store.getState().send('Hi')
    await store.getState().stop()
    expect(bridge.calls.at(-1)).toEqual({ method: 'chat.stop', input: { chatId } })
  })

  it('asks for a model instead of sending when none is picked', async () => {
    const { bridge, store } = setup()
    store.getState().newConversation()
    await store.getState().send('Hi')
    expect(store.getState().composerError?.message).toBe('Pick a model to chat with first.')
    expect(bridge.calls.some((c) => c.method === 'chat.send')).toBe(false)
  })

  it(
    'keeps conversations in the backend across restarts, opens the latest, and marks an answer cut off by the ' +
      'restart',
    async () => {
      const { bridge, store } = setup()
      await store.getState().loadModels()
      const chatId = store.getState().newConversation()
      await store.getState().send('Remember me')
      const reopened = createChatStore(bridge)
      await reopened.getState().loadConversations()
      expect(reopened.getState().activeId).toBe(chatId)
      const messages = reopened.getState().conversations[0]?.messages ?? []
      expect(messages.map((m) => m.content)).toEqual(['Remember me', ''])
      expect(messages[1]).toMatchObject({ status: 'error', error: { code: 'interrupted' } })
    },
  )

  it('interrupt ends only the named answers still streaming and asks the backend to stop them', async () => {
    const { bridge, store } = setup()
    await store.getState().loadModels()
    const first = store.getState().newConversation()
    await store.getState().send('One')
    const cut = thread(store).at(-1)?.id ?? ''
    const second = store.getState().newConversation()
    await store.getState().send('Two')
    store.getState().interrupt([cut])
    const answerOf = (id: string) =>
      store
        .getState()
        .conversations.find((c) => c.id === id)
        ?.messages.at(-1)
    expect(answerOf(first)).toMatchObject({ status: 'error', error: { code: 'interrupted' } })
    expect(answerOf(second)?.status).toBe('streaming')
    expect(bridge.calls.filter((c) => c.method === 'chat.stop')).toEqual([
      { method: 'chat.stop', input: { chatId: first } },
    ])
    bridge.emit('chat.token', { chatId: first, text: 'late', token: 0 })
    expect(answerOf(first)?.content).toBe('')
  })

  it('generates chat ids the contract accepts', () => {
    expect(randomChatId()).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
  })
})
