import type { ChatMessage, ChatSummary } from '../../../protocol/app'
import type { ModelSummary } from '../../../protocol/swarm'
import { formatCredits, formatTokensPerSecond, shortId } from '../../format'
import { layerRange } from '../../words'
import type { ChatEntry, ChatState, Conversation } from './initialState'

export function activeConversation(state: Pick<ChatState, 'conversations' | 'activeId'>): Conversation | null {
  return state.conversations.find((c) => c.id === state.activeId) ?? null
}

/** Most recently used first. */
export function conversationList(conversations: Conversation[]): Conversation[] {
  return [...conversations].sort((a, b) => b.updatedAt - a.updatedAt)
}

/** The model to chat with when the tracker lists only one: nothing to pick. */
export function soleModelId(models: readonly ModelSummary[]): string | null {
  return models.length === 1 ? (models[0]?.modelId ?? null) : null
}

/** A model as the picker names it: by its id, with its own name when that says more than its family does. */
export function modelLabel(model: ModelSummary): string {
  const name = model.name.trim()
  const plain = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '')
  if (name === '' || plain(name) === plain(model.architecture) || plain(name) === plain(model.modelId))
    return model.modelId
  return `${name} (${model.modelId})`
}

/** The model a conversation chats with: its own, or the only one listed. */
export function shownModelId(conversation: Conversation | null, models: readonly ModelSummary[]): string | null {
  return conversation?.modelId ?? soleModelId(models)
}

/**
 * The conversations without those that have no message yet, but for those `keep` names (the one the user is in, one
 * whose first turn is being sent).
 */
export function withoutEmpty(conversations: Conversation[], keep: (id: string) => boolean): Conversation[] {
  const kept = conversations.filter((c) => c.messages.length > 0 || keep(c.id))
  return kept.length === conversations.length ? conversations : kept
}

export function streamingAnswer(conversation: Conversation | null): ChatEntry | null {
  const last = conversation?.messages.at(-1)
  return last?.role === 'assistant' && last.status === 'streaming' ? last : null
}

/** Ids of the answers still streaming, across all conversations (only a conversation's last entry can be). */
export function streamingAnswerIds(conversations: Conversation[]): string[] {
  return conversations.flatMap((c) => streamingAnswer(c)?.id ?? [])
}

export function canRegenerate(conversation: Conversation | null): boolean {
  const last = conversation?.messages.at(-1)
  return last !== undefined && last.role === 'assistant' && last.status !== 'streaming'
}

/** The turns chat.send carries: failed or empty answers are left out, so the model never sees them. */
export function requestMessages(messages: ChatEntry[]): ChatMessage[] {
  return messages
    .filter((m) => m.role === 'user' || (m.status !== 'error' && m.content !== ''))
    .map((m) => ({ role: m.role, content: m.content }))
}

export function titleFrom(text: string): string {
  const line = text.trim().replace(/\s+/g, ' ')
  return line.length > 40 ? `${line.slice(0, 39)}…` : line || 'New chat'
}

export interface HopView {
  hostId: string
  shortId: string
  blocks: string
  ms: string
  /** No second host serves its blocks (shown as "unaudited"). */
  unaudited: boolean
  /** No second host serves its blocks, and the tracker re-runs them itself to check it (shown as "tracker-checked"). */
  trackerChecked: boolean
  /** Twins paid to stand by for its audits (shown as "2 twins on standby"); 0 for none named. */
  standby: number
  /** This computer's own host (its steps are free: local use). */
  own: boolean
}

/** `ownHostId`: this computer's host, whose hops are marked as its own. */
export function hopViews(entry: ChatEntry, ownHostId: string | null = null): HopView[] {
  return (entry.route ?? []).map((hop) => ({
    hostId: hop.hostId,
    shortId: shortId(hop.hostId),
    blocks: layerRange(hop.blocks),
    ms: hop.medianMs === null ? '— ms/step' : `${hop.medianMs.toFixed(1)} ms/step`,
    unaudited: hop.unaudited === true,
    trackerChecked: hop.auditedBy === 'tracker',
    standby: hop.standby ?? 0,
    own: ownHostId !== null && hop.hostId === ownHostId,
  }))
}

/** `ownHostId`: this computer's host; an answer it served alone was free (local use), and says so. */
export function answerStats(summary: ChatSummary, ownHostId: string | null = null): string {
  const parts = [`${summary.completionTokens} tokens`, formatTokensPerSecond(summary.tokensPerSecond)]
  // the conversation's earlier turns stayed on the hosts: only the rest of the prompt was sent and computed
  const cached = summary.cachedTokens ?? 0
  if (cached > 0)
    parts.push(`${cached.toLocaleString('en')} of ${summary.promptTokens.toLocaleString('en')} prompt tokens reused`)
  if (summary.chargedMicro > 0) parts.push(`${formatCredits(summary.chargedMicro)} credits`)
  else if (summary.route.length > 0 && summary.route.every((hop) => hop.hostId === ownHostId))
    parts.push('free: your own host')
  if (summary.finishReason === 'aborted') parts.push('stopped')
  if (summary.finishReason === 'length') parts.push('hit the token limit')
  return parts.join(' · ')
}
