import { describe, expect, it } from 'vitest'
import type { Conversation } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { keptConversations } from '../../../test/renderer/conversation-fixtures'
import { type FakeHandlers, fakeBridge } from '../../../test/renderer/fake-bridge'
import { tinyModel } from '../../../test/renderer/hosting-fixtures'
import { LEGACY_KEY } from './history'
import { createChatStore } from './store'

const old: Conversation = {
  id: 'old1',
  title: 'A story from before',
  modelId: 'stories260k',
  createdAt: 1,
  updatedAt: 5,
  messages: [
    { id: 'u', role: 'user', content: 'Once upon a time', createdAt: 1 },
    { id: 'a', role: 'assistant', content: ' there was', createdAt: 2, status: 'streaming', modelId: 'stories260k' },
  ],
}

/** localStorage as zustand's persist left it in a browser. */
function browserStorage(conversations: unknown[]) {
  const items = new Map([
    [LEGACY_KEY, JSON.stringify({ state: { conversations, activeId: null, maxTokens: 64 }, version: 1 })],
  ])
  return { items, getItem: (k: string) => items.get(k) ?? null, removeItem: (k: string) => void items.delete(k) }
}

function setup(
  options: { handlers?: FakeHandlers; kept?: Conversation[]; legacy?: ReturnType<typeof browserStorage> } = {},
) {
  const backend = keptConversations(options.kept)
  const bridge = fakeBridge({
    'models.list': () => ({ models: [tinyModel] }),
    'chat.send': ({ chatId }) => ({ chatId }),
    'chat.count': () => ({ promptTokens: 5, contextLength: 2048 }),
    ...backend.handlers,
    ...options.handlers,
  })
  let n = 0
  const store = createChatStore(bridge, {
    newId: () => `id${++n}`,
    now: () => n,
    ...(options.legacy ? { legacy: options.legacy } : {}),
  })
  store.getState().subscribe()
  const saves = () => bridge.calls.filter((c) => c.method === 'conversations.save').length
  return { bridge, store, kept: backend.kept, saves }
}

describe('conversations kept by the backend', () => {
  it('saves a conversation as the user sends and once its answer ends, not on every token', async () => {
    const { bridge, store, kept, saves } = setup()
    await store.getState().loadModels()
    const chatId = store.getState().newConversation()
    await store.getState().send('Hello')
    const atSend = saves()
    for (const [i, text] of [' there', ' my', ' friend'].entries())
      bridge.emit('chat.token', { chatId, text, token: i })
    expect(saves()).toBe(atSend)
    expect(kept.get(chatId)?.messages.at(-1)).toMatchObject({ content: '', status: 'streaming' })
    bridge.emit('chat.done', {
      chatId,
      promptTokens: 3,
      completionTokens: 3,
      finishReason: 'stop',
      tokensPerSecond: 9,
      route: [],
      chargedMicro: 0,
    })
    expect(saves()).toBe(atSend + 1)
    expect(kept.get(chatId)?.messages.at(-1)).toMatchObject({ content: ' there my friend', status: 'done' })
  })

  it('deletes a removed conversation from the backend', async () => {
    const { store, kept } = setup({ kept: [old] })
    await store.getState().loadConversations()
    store.getState().remove(old.id)
    await Promise.resolve()
    expect(kept.has(old.id)).toBe(false)
  })

  it(
    'moves the conversations a browser held before into ' + 'the backend once, then clears them from the browser',
    async () => {
      const legacy = browserStorage([old])
      const first = setup({ legacy })
      await first.store.getState().loadConversations()
      expect(first.kept.get(old.id)).toEqual(old)
      expect(legacy.items.has(LEGACY_KEY)).toBe(false)
      // Shown as the browser had it, the answer cut off by the old app's close; written back only when it changes.
      expect(first.store.getState().conversations.map((c) => c.messages.at(-1)?.status)).toEqual(['error'])
      expect(first.saves()).toBe(1)
      expect(first.store.getState().historyError).toBeNull()
    },
  )

  it("keeps the browser's copy when the backend refuses a conversation, and says which", async () => {
    const legacy = browserStorage([old, { id: 'bad id!', title: 'broken' }])
    const { store, kept } = setup({
      legacy,
      handlers: {
        'conversations.save': () => {
          throw new NeuronError('bad_request', 'conversations.save: the disk is full')
        },
      },
    })
    await store.getState().loadConversations()
    expect(kept.size).toBe(0)
    expect(legacy.items.has(LEGACY_KEY)).toBe(true)
    expect(store.getState().historyError?.message).toBe(
      `"A story from before" could not be moved from this browser to the app: conversations.save: the disk is full ` +
        `2 conversation(s) stay in this browser's storage (${LEGACY_KEY}); the app tries again at the next start.`,
    )
  })

  it('says which conversation could not be saved', async () => {
    const { store } = setup({
      handlers: {
        'conversations.save': () => {
          throw new NeuronError('too_many_conversations', '1000 conversations are kept already; delete old ones')
        },
      },
    })
    await store.getState().loadModels()
    store.getState().newConversation()
    await store.getState().send('One more')
    expect(store.getState().historyError).toEqual({
      code: 'not_saved',
      message: '"One more" could not be saved: 1000 conversations are kept already; delete old ones',
    })
  })

  it('keeps the conversations already open when it loads again after a reconnection', async () => {
    const { store, kept } = setup({ kept: [old] })
    await store.getState().loadConversations()
    await store.getState().loadModels()
    store.getState().select(old.id)
    await store.getState().send('And then?')
    await store.getState().loadConversations()
    expect(store.getState().conversations).toHaveLength(1)
    expect(store.getState().conversations[0]?.messages.map((m) => m.content)).toEqual([
      'Once upon a time',
      ' there was',
      'And then?',
      '',
    ])
    expect(kept.get(old.id)?.messages).toHaveLength(4)
  })
})
