import { describe, expect, it } from 'vitest'
import { Conversation, MAX_ANSWER_VERSIONS } from '../../../protocol/app'
import { answerVersions, keptBeside, showVersion, versionPosition } from './alternatives'
import type { ChatEntry } from './initialState'

const answer = (id: string, status: ChatEntry['status'] = 'done'): ChatEntry => ({
  id,
  role: 'assistant',
  content: `answer ${id}`,
  createdAt: 0,
  status,
})

/** Three answers made one after the other, the third shown. */
const three = (): ChatEntry => ({ ...answer('c'), ...keptBeside({ ...answer('b'), ...keptBeside(answer('a')) }) })

describe("a turn's regenerated answers", () => {
  it('keeps the answer a regenerate replaces, in order, and shows the newest last', () => {
    const entry = three()
    expect(answerVersions(entry).map((v) => v.id)).toEqual(['a', 'b', 'c'])
    expect(versionPosition(entry)).toEqual({ shown: 3, count: 3 })
    expect(versionPosition(answer('x'))).toEqual({ shown: 1, count: 1 })
  })

  it('pages to another answer: its text is what the turn shows, the order stays', () => {
    const second = showVersion(three(), 1)
    expect([second.id, second.content, second.role]).toEqual(['b', 'answer b', 'assistant'])
    expect(versionPosition(second)).toEqual({ shown: 2, count: 3 })
    expect(answerVersions(second).map((v) => v.id)).toEqual(['a', 'b', 'c'])
    // A version without a summary shows none, even where the one before had one.
    const summed = { ...three(), summary: undefined, route: [] }
    expect(showVersion(summed, 0).route).toBeUndefined()
    expect(showVersion(second, 7)).toBe(second)
  })

  it('drops a failed or empty answer instead of keeping it, and keeps at most the newest versions', () => {
    expect(keptBeside(answer('x', 'error'))).toEqual({})
    expect(keptBeside({ ...answer('x'), content: '' })).toEqual({})
    let entry = answer('0')
    for (let i = 1; i < MAX_ANSWER_VERSIONS + 5; i++) entry = { ...answer(String(i)), ...keptBeside(entry) }
    expect(versionPosition(entry).count).toBe(MAX_ANSWER_VERSIONS)
    expect(answerVersions(entry).at(0)?.id).toBe('5')
  })

  it('keeps them with the conversation, and loads conversations kept before answers had versions', () => {
    const base = { id: 'c1', title: 't', modelId: 'stories260k', createdAt: 0, updatedAt: 0 }
    const kept = Conversation.parse(JSON.parse(JSON.stringify({ ...base, messages: [showVersion(three(), 0)] })))
    expect(versionPosition(kept.messages[0] as ChatEntry)).toEqual({ shown: 1, count: 3 })
    const old = Conversation.parse({ ...base, messages: [{ ...answer('a'), role: 'assistant' }] })
    expect(versionPosition(old.messages[0] as ChatEntry)).toEqual({ shown: 1, count: 1 })
  })
})
