import type { ChatHop, ChatSummary } from '../../../protocol/app'
import type { ModelSummary } from '../../../protocol/swarm'
import type { ShownError } from '../../api/errorText'

export type AnswerStatus = 'streaming' | 'done' | 'error'

export interface ChatEntry {
  id: string
  role: 'user' | 'assistant'
  content: string
  createdAt: number
  /** Assistant answers only. */
  status?: AnswerStatus
  modelId?: string
  route?: ChatHop[]
  summary?: ChatSummary
  error?: ShownError
}

export interface Conversation {
  /** Also the chatId of chat.send: events name the conversation they belong to. */
  id: string
  title: string
  modelId: string | null
  messages: ChatEntry[]
  createdAt: number
  updatedAt: number
}

export interface ChatState {
  conversations: Conversation[]
  activeId: string | null
  /** Tokens per answer; small by default because a swarm of home computers is slow. */
  maxTokens: number
  models: ModelSummary[]
  modelsError: ShownError | null
  /** Why the last send could not start (no model picked, an answer still running). */
  composerError: ShownError | null
}

export const DEFAULT_MAX_TOKENS = 64

export const initialChatState: ChatState = {
  conversations: [],
  activeId: null,
  maxTokens: DEFAULT_MAX_TOKENS,
  models: [],
  modelsError: null,
  composerError: null,
}
