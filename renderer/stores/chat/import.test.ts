import { describe, expect, it } from 'vitest'
import type { Conversation } from '../../../protocol/app'
import { keptConversations } from '../../../test/renderer/conversation-fixtures'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { tinyModel } from '../../../test/renderer/hosting-fixtures'
import { conversationJson } from './export'
import { importConversation } from './import'
import { createChatStore } from './store'

let n = 0
const options = { newId: () => `new${++n}`, now: () => 50, modelIds: ['stories260k'], modelId: 'stories260k' }

const exported: Conversation = {
  id: 'c1',
  title: 'Cats',
  modelId: 'stories260k',
  messages: [
    { id: 'u1', role: 'user', content: 'A cat?', createdAt: 1 },
    { id: 'a1', role: 'assistant', content: 'Meow.', createdAt: 2, status: 'done', alternatives: [] },
    { id: 'u2', role: 'user', content: 'More', createdAt: 3 },
    { id: 'a2', role: 'assistant', content: 'Mew', createdAt: 4, status: 'streaming' },
  ],
  createdAt: 1,
  updatedAt: 4,
}

describe('importing a conversation file', () => {
  it('reads back what the app exports, under a new id, an answer cut off shown as interrupted', () => {
    const read = importConversation('cats.json', conversationJson(exported), options)
    expect(read.ok).toBe(true)
    if (!read.ok) return
    expect(read.conversation).toMatchObject({ title: 'Cats', modelId: 'stories260k', updatedAt: 50 })
    expect(read.conversation.id).not.toBe('c1')
    expect(read.conversation.messages.map((m) => [m.content, m.status])).toEqual([
      ['A cat?', undefined],
      ['Meow.', 'done'],
      ['More', undefined],
      ['Mew', 'error'],
    ])
  })

  it('reads an OpenAI-style chat: system turns as the system prompt, text parts joined, its model if listed', () => {
    const text = JSON.stringify({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [{ type: 'text', text: 'Hi ' }, { type: 'image_url' }, { type: 'text', text: 'you' }],
        },
        { role: 'assistant', content: 'Hello.' },
      ],
    })
    const read = importConversation('chat.json', text, options)
    expect(read.ok && read.conversation).toMatchObject({
      title: 'Hi you',
      modelId: 'stories260k',
      settings: { systemPrompt: 'Be brief.' },
      messages: [
        { role: 'user', content: 'Hi you' },
        { role: 'assistant', content: 'Hello.', status: 'done' },
      ],
    })
  })

  it('refuses what is not a conversation, saying which file and why', () => {
    const refused = (text: string) => {
      const read = importConversation('bad.json', text, options)
      return read.ok ? 'imported' : read.message
    }
    expect(refused('{"messages": [')).toMatch(/^bad\.json was not imported: it is not JSON\. Import a chat exported/)
    expect(refused('{"messages": []}')).toContain('the chat has no messages')
    expect(refused('{"messages": [{"role": "robot", "content": "x"}]}')).toContain('at messages.0.role')
    expect(refused('[1, 2]')).toContain('it is neither format')
    expect(refused(JSON.stringify({ messages: [{ role: 'system', content: 'x' }] }))).toContain('no user or assistant')
  })

  it('adds an imported conversation and shows it; a bad file changes nothing and says why', async () => {
    const backend = keptConversations()
    const bridge = fakeBridge({ 'models.list': () => ({ models: [tinyModel] }), ...backend.handlers })
    const store = createChatStore(bridge, { newId: () => `id${++n}` })
    await store.getState().loadModels()
    expect(store.getState().importFile('bad.json', 'nope')).toBe(false)
    expect(store.getState().importError?.message).toMatch(/^bad\.json was not imported/)
    expect(store.getState().conversations).toEqual([])
    expect(store.getState().importFile('cats.json', conversationJson(exported))).toBe(true)
    const [imported] = store.getState().conversations
    expect([store.getState().activeId, store.getState().importError]).toEqual([imported?.id, null])
    await new Promise((r) => setTimeout(r, 0))
    expect(backend.kept.get(imported?.id ?? '')?.title).toBe('Cats')
  })
})
