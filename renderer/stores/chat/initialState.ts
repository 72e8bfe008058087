import type { ChatCount, ChatEntry, Conversation } from '../../../protocol/app'
import type { ModelSummary } from '../../../protocol/swarm'
import type { ShownError } from '../../api/errorText'

/** Conversations are the contract's: the backend keeps them in the data dir (conversations.*). */
export type { ChatEntry, Conversation } from '../../../protocol/app'

export interface ChatState {
  conversations: Conversation[]
  activeId: string | null
  /** Tokens per answer; small by default because a swarm of home computers is slow. */
  maxTokens: number
  models: ModelSummary[]
  modelsError: ShownError | null
  /** Why the last send could not start (no model picked, an answer still running). */
  composerError: ShownError | null
  /** Conversations that could not be loaded, imported or saved, in words; null when all were. */
  historyError: ShownError | null
  /** The active conversation's prompt with the composer's text, counted by the backend; null until counted. */
  promptCount: (ChatCount & { conversationId: string }) | null
  /** Number fields whose text is not a valid value, with why (sending waits until they are fixed). */
  invalidFields: Partial<Record<string, string>>
  /** Each model's context length, once known (chat.context or a count): max tokens is bounded by it. */
  contextLengths: Record<string, number>
  /** Why the last file given to import was not imported; null when it was (or none was given). */
  importError: ShownError | null
  /** The turn deleted last, where it was, until it is put back (undo) or forgotten. */
  deletedMessage: { conversationId: string; index: number; entry: ChatEntry } | null
}

export const DEFAULT_MAX_TOKENS = 64

export const initialChatState: ChatState = {
  conversations: [],
  activeId: null,
  maxTokens: DEFAULT_MAX_TOKENS,
  models: [],
  modelsError: null,
  composerError: null,
  historyError: null,
  promptCount: null,
  invalidFields: {},
  contextLengths: {},
  deletedMessage: null,
  importError: null,
}
