import { describe, expect, it } from 'vitest'
import { Conversation as ConversationSchema, DEFAULT_CHAT_SETTINGS } from '../../../protocol/app'
import { conversationJson, conversationMarkdown, exportFileName, searchConversations } from './export'
import type { Conversation } from './initialState'

const cats: Conversation = {
  id: 'c1',
  title: 'Cats: a story?',
  modelId: 'stories260k',
  settings: { ...DEFAULT_CHAT_SETTINGS, systemPrompt: 'Be brief.' },
  messages: [
    { id: 'u1', role: 'user', content: 'Tell me about cats', createdAt: 1 },
    { id: 'a1', role: 'assistant', content: 'Cats purr.\n\n```\npurr()\n```', createdAt: 2, status: 'done' },
    { id: 'u2', role: 'user', content: 'More', createdAt: 3 },
    {
      id: 'a2',
      role: 'assistant',
      content: '',
      createdAt: 4,
      status: 'error',
      error: { code: 'no_route', message: 'no hosts' },
    },
  ],
  createdAt: 1,
  updatedAt: 4,
}
const dogs: Conversation = {
  ...cats,
  id: 'c2',
  title: 'Dogs',
  settings: undefined,
  messages: [{ id: 'u3', role: 'user', content: 'Woof', createdAt: 5 }],
}

describe('exporting and finding conversations', () => {
  it('writes a conversation as Markdown with its system prompt, turns and failures', () => {
    expect(conversationMarkdown(cats)).toBe(
      '# Cats: a story?\n\nModel: stories260k\n\n## System\n\nBe brief.\n\n## You\n\nTell me about cats\n\n## ' +
        'Assistant\n\nCats purr.\n\n```\npurr()\n```\n\n## You\n\nMore\n\n## Assistant\n\n*(failed: no hosts)*\n',
    )
  })

  it('writes JSON the contract reads back as the same conversation', () => {
    expect(ConversationSchema.parse(JSON.parse(conversationJson(cats)))).toEqual(cats)
  })

  it('names the file after the title', () => {
    expect(exportFileName(cats, 'md')).toBe('cats-a-story.md')
    expect(exportFileName({ ...cats, title: '???' }, 'json')).toBe('conversation.json')
  })

  it('finds conversations by words in their title or turns, in any case', () => {
    expect(searchConversations([cats, dogs], 'PURR').map((c) => c.id)).toEqual(['c1'])
    expect(searchConversations([cats, dogs], 'woof dogs').map((c) => c.id)).toEqual(['c2'])
    expect(searchConversations([cats, dogs], '  ').map((c) => c.id)).toEqual(['c1', 'c2'])
    expect(searchConversations([cats, dogs], 'cats woof')).toEqual([])
  })
})
