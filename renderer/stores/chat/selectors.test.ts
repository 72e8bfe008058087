import { describe, expect, it } from 'vitest'
import { tinyModel } from '../../../test/renderer/hosting-fixtures'
import type { ChatEntry, Conversation } from './initialState'
import {
  answerStats,
  canRegenerate,
  conversationList,
  hopViews,
  modelLabel,
  requestMessages,
  shownModelId,
  soleModelId,
  titleFrom,
  withoutEmpty,
} from './selectors'

const user = (content: string): ChatEntry => ({ id: content, role: 'user', content, createdAt: 0 })
const answer = (content: string, status: ChatEntry['status']): ChatEntry => ({
  id: content,
  role: 'assistant',
  content,
  createdAt: 0,
  status,
})
const conversation = (messages: ChatEntry[], updatedAt = 0): Conversation => ({
  id: `c${updatedAt}`,
  title: 't',
  modelId: 'm',
  messages,
  createdAt: 0,
  updatedAt,
})

describe('chat selectors', () => {
  it('leaves failed and empty answers out of what the model sees', () => {
    expect(requestMessages([user('a'), answer('', 'error'), user('b'), answer('ok', 'done'), user('c')])).toEqual([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'c' },
    ])
  })

  it('offers regenerate only for a finished last answer', () => {
    expect(canRegenerate(conversation([user('a'), answer('x', 'done')]))).toBe(true)
    expect(canRegenerate(conversation([user('a'), answer('x', 'streaming')]))).toBe(false)
    expect(canRegenerate(conversation([user('a')]))).toBe(false)
  })

  it(
    'shows the route hop by hop with a short host id, its blocks and ms per step, which hops nobody can check, and ' +
      'which the tracker checks itself, and how many twins stand by',
    () => {
      const route = [
        {
          hostId: '0123456789abcdef0123',
          blocks: [0, 3] as const,
          medianMs: 4.25,
          auditedBy: 'twins' as const,
          standby: 2,
        },
        { hostId: 'fedcba98765432100123', blocks: [3, 5] as const, medianMs: null, unaudited: true },
        { hostId: 'abcdefabcdefabcdef01', blocks: [5, 6] as const, medianMs: 2, auditedBy: 'tracker' as const },
      ]
      const hop = (
        hostId: string,
        blocks: string,
        ms: string,
        unaudited: boolean,
        trackerChecked: boolean,
        standby = 0,
      ) => ({
        hostId,
        shortId: hostId.slice(0, 8),
        blocks,
        ms,
        unaudited,
        trackerChecked,
        standby,
        own: hostId === 'fedcba98765432100123',
      })
      expect(hopViews({ ...answer('x', 'done'), route }, 'fedcba98765432100123')).toEqual([
        hop('0123456789abcdef0123', 'layers 1–3', '4.3 ms/step', false, false, 2),
        hop('fedcba98765432100123', 'layers 4–5', '— ms/step', true, false),
        hop('abcdefabcdefabcdef01', 'layer 6', '2.0 ms/step', false, true),
      ])
    },
  )

  it('summarises an answer and titles a conversation by its first words', () => {
    const summary = {
      chatId: 'c',
      promptTokens: 3,
      completionTokens: 20,
      finishReason: 'aborted' as const,
      tokensPerSecond: 8.25,
      route: [],
      chargedMicro: 0,
    }
    expect(answerStats(summary)).toBe('20 tokens · 8.3 tok/s · stopped')
    // Served by this computer's own host alone: free (local use); another host's steps are charged.
    const own = { hostId: 'fedcba98765432100123', blocks: [0, 5] as const, medianMs: 2 }
    expect(answerStats({ ...summary, route: [own], finishReason: 'stop' }, own.hostId)).toBe(
      '20 tokens · 8.3 tok/s · free: your own host',
    )
    expect(answerStats({ ...summary, route: [own], finishReason: 'stop', chargedMicro: 1500 }, 'another')).toBe(
      '20 tokens · 8.3 tok/s · 0.0015 credits',
    )
    // a conversation's later turn: what its session kept on the hosts
    expect(answerStats({ ...summary, promptTokens: 2614, cachedTokens: 2175, finishReason: 'stop' })).toBe(
      '20 tokens · 8.3 tok/s · 2,175 of 2,614 prompt tokens reused',
    )
    expect(titleFrom('  Tell me\na story about a dragon who learned to fly over the sea ')).toBe(
      'Tell me a story about a dragon who lear…',
    )
    expect(conversationList([conversation([], 1), conversation([], 3)]).map((c) => c.id)).toEqual(['c3', 'c1'])
  })

  it('picks the only model listed, and names a model by its id unless its own name says more than its family', () => {
    expect(soleModelId([tinyModel])).toBe('stories260k')
    expect(soleModelId([tinyModel, { ...tinyModel, modelId: 'other' }])).toBeNull()
    expect(shownModelId(null, [tinyModel])).toBe('stories260k')
    expect(shownModelId(conversation([]), [tinyModel])).toBe('m')
    expect(modelLabel({ ...tinyModel, name: 'TinyStories 260K' })).toBe('TinyStories 260K (stories260k)')
    expect(modelLabel({ ...tinyModel, name: 'llama' })).toBe('stories260k')
    expect(modelLabel({ ...tinyModel, name: 'Stories260K' })).toBe('stories260k')
  })

  it('keeps no conversation without messages but the one the user is in', () => {
    const empty = { ...conversation([], 1), id: 'empty' }
    const full = conversation([user('a')], 2)
    expect(withoutEmpty([empty, full], () => false)).toEqual([full])
    expect(withoutEmpty([empty, full], (id) => id === 'empty')).toEqual([empty, full])
  })
})
