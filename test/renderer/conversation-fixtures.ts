import { AppApi, type Conversation } from '../../protocol/app'
import type { FakeHandlers } from './fake-bridge'

/**
 * The backend's conversations.* for store tests: kept in a Map as
 * the data dir keeps files, each save checked by the contract.
 */
export function keptConversations(initial: readonly Conversation[] = []) {
  const kept = new Map(initial.map((c) => [c.id, c]))
  const handlers = {
    'conversations.list': () => ({ conversations: [...kept.values()], unreadable: [] }),
    'conversations.save': (input) => {
      const { conversation } = AppApi['conversations.save'].request.parse(input)
      kept.set(conversation.id, conversation)
      return {}
    },
    'conversations.delete': ({ id }) => {
      kept.delete(id)
      return {}
    },
  } satisfies FakeHandlers
  return { kept, handlers }
}
