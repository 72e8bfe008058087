import { z } from 'zod'
import { Conversation, type NeuronBridge } from '../../../protocol/app'
import { type ShownError, shownError } from '../../api/errorText'
import { streamingAnswer } from './selectors'

/** Where the chat kept conversations before the backend did: zustand's persist in the browser's storage. */
export const LEGACY_KEY = 'neuron.chat'
export type LegacyStorage = Pick<Storage, 'getItem' | 'removeItem'>
const LegacyState = z.object({ state: z.object({ conversations: z.array(z.unknown()) }) })

const INTERRUPTED: ShownError = {
  code: 'interrupted',
  message: 'This answer was interrupted when the app closed. Regenerate to ask again.',
}

/** An answer still streaming when the conversation was saved will never finish: it is shown as interrupted. */
export function interrupted(conversation: Conversation): Conversation {
  if (streamingAnswer(conversation) === null) return conversation
  return {
    ...conversation,
    messages: conversation.messages.map((m) =>
      m.status === 'streaming' ? { ...m, status: 'error', error: INTERRUPTED } : m,
    ),
  }
}

/**
 * Whether a changed conversation is written now: not while tokens
 * stream into its answer (written as it starts and when it ends).
 */
export function worthSaving(before: Conversation | undefined, after: Conversation): boolean {
  const answer = streamingAnswer(after)
  return answer === null || answer.id !== streamingAnswer(before ?? null)?.id
}

/** The conversations a browser still holds from before, each checked against the contract. */
export function legacyConversations(
  storage: LegacyStorage,
): { conversations: Conversation[]; unreadable: number } | null {
  const text = storage.getItem(LEGACY_KEY)
  if (text === null) return null
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return { conversations: [], unreadable: 1 }
  }
  const state = LegacyState.safeParse(raw)
  if (!state.success) return { conversations: [], unreadable: 1 }
  const parsed = state.data.state.conversations.map((c) => Conversation.safeParse(c))
  return {
    conversations: parsed.flatMap((p) => (p.success ? [p.data] : [])),
    unreadable: parsed.filter((p) => !p.success).length,
  }
}

/**
 * The chat's conversations as the backend keeps them: loaded at start (importing once what the browser
 * held before), then each change saved and each removal deleted, in order.
 */
export function conversationHistory(bridge: NeuronBridge, legacy: LegacyStorage | undefined) {
  /** The version of each conversation the backend has: saved from here or loaded. */
  const known = new Map<string, Conversation>()

  /** Saves what the browser held before the backend kept conversations; the browser's copy goes once all are in. */
  const importLegacy = async (kept: Conversation[], problems: string[]): Promise<Conversation[]> => {
    const found = legacy === undefined ? null : legacyConversations(legacy)
    if (legacy === undefined || found === null) return []
    const have = new Set(kept.map((c) => c.id))
    const imported: Conversation[] = []
    let failed = found.unreadable
    for (const conversation of found.conversations.filter((c) => !have.has(c.id))) {
      try {
        await bridge.call('conversations.save', { conversation })
        imported.push(conversation)
      } catch (error) {
        failed++
        problems.push(
          `"${conversation.title}" could not be moved from this browser to the app: ${shownError(error).message}`,
        )
      }
    }
    if (failed === 0) legacy.removeItem(LEGACY_KEY)
    else
      problems.push(
        `${failed} conversation(s) stay in this browser's storage (${LEGACY_KEY}); the app tries again at the next ` +
          `start.`,
      )
    return imported
  }

  return {
    async load(): Promise<{ conversations: Conversation[]; problems: string[] }> {
      const { conversations, unreadable } = await bridge.call('conversations.list', {})
      const problems = [...unreadable]
      return { conversations: [...conversations, ...(await importLegacy(conversations, problems))], problems }
    },
    /** Marks conversations as what the backend has, so they are not written back. */
    adopt(conversations: readonly Conversation[]): void {
      for (const c of conversations) known.set(c.id, c)
    },
    /** Saves what changed between two states of the chat and deletes what went; failures come to `failed`. */
    sync(previous: readonly Conversation[], next: readonly Conversation[], failed: (error: ShownError) => void): void {
      const before = new Map(previous.map((c) => [c.id, c]))
      for (const conversation of next) {
        if (known.get(conversation.id) === conversation || !worthSaving(before.get(conversation.id), conversation))
          continue
        known.set(conversation.id, conversation)
        bridge.call('conversations.save', { conversation }).catch((error) => {
          failed({
            code: 'not_saved',
            message: `"${conversation.title}" could not be saved: ${shownError(error).message}`,
          })
        })
      }
      const ids = new Set(next.map((c) => c.id))
      for (const id of known.keys()) {
        if (ids.has(id)) continue
        known.delete(id)
        bridge.call('conversations.delete', { id }).catch((error) => {
          failed({
            code: 'not_deleted',
            message: `A deleted conversation is still kept by the app: ${shownError(error).message}`,
          })
        })
      }
    },
  }
}
