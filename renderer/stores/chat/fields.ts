import {
  type ChatCount,
  type ChatMessage,
  type ChatSettings,
  DEFAULT_CHAT_SETTINGS,
  SAMPLING_BOUNDS,
} from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import type { Conversation } from './initialState'
import { requestMessages } from './selectors'

/** The chat's number fields: the conversation's sampling, and max tokens. */
export type NumberField = 'temperature' | 'topP' | 'topK' | 'repeatPenalty' | 'seed' | 'maxTokens'

export const FIELD_LABELS: Record<NumberField, string> = {
  temperature: 'Temperature',
  topP: 'Top-p',
  topK: 'Top-k',
  repeatPenalty: 'Repetition penalty',
  seed: 'Seed',
  maxTokens: 'Max tokens',
}

const WHOLE: ReadonlySet<NumberField> = new Set(['topK', 'seed', 'maxTokens'])

export type ParsedField = { ok: true; value: number | null } | { ok: false; message: string }

/**
 * A field's text as the number it stands for (seed: empty is
 * null, random each time), or what is wrong with it, in words.
 */
export function parseField(field: NumberField, text: string): ParsedField {
  const { min, max } = SAMPLING_BOUNDS[field]
  const whole = WHOLE.has(field)
  const wanted = `${FIELD_LABELS[field]} takes ${whole ? 'a whole number' : 'a number'} from ${min} to ${max}`
  const trimmed = text.trim()
  if (trimmed === '')
    return field === 'seed' ? { ok: true, value: null } : { ok: false, message: `${wanted}; it is empty.` }
  const value = Number(trimmed)
  if (!Number.isFinite(value)) return { ok: false, message: `${wanted}; "${trimmed}" is not a number.` }
  if (whole && !Number.isInteger(value)) return { ok: false, message: `${wanted}; ${trimmed} is not whole.` }
  if (value < min || value > max) return { ok: false, message: `${wanted}; ${trimmed} is out of range.` }
  return { ok: true, value }
}

/** A conversation's settings; those kept before settings existed get the defaults. */
export function conversationSettings(conversation: Conversation | null): ChatSettings {
  return conversation?.settings ?? DEFAULT_CHAT_SETTINGS
}

/** The turns chat.send and chat.count carry: the system prompt first when there is one, then the conversation's. */
export function promptMessages(conversation: Conversation, draft?: string): ChatMessage[] {
  const { systemPrompt } = conversationSettings(conversation)
  const system: ChatMessage[] = systemPrompt.trim() === '' ? [] : [{ role: 'system', content: systemPrompt }]
  const user: ChatMessage[] =
    draft === undefined || draft.trim() === '' ? [] : [{ role: 'user', content: draft.trim() }]
  return [...system, ...requestMessages(conversation.messages), ...user]
}

/** The sampling chat.send carries for a conversation; no seed when it is random, so each answer draws a fresh one. */
export function samplingRequest(settings: ChatSettings) {
  const { temperature, topP, topK, repeatPenalty, seed } = settings
  return { temperature, topP, topK, repeatPenalty, ...(seed === null ? {} : { seed }) }
}

/** How the prompt and the answer fill the model's context, shown beside the composer. */
export interface ContextFit {
  text: string
  over: boolean
}

export function contextFit(count: ChatCount, maxTokens: number): ContextFit {
  const over = count.promptTokens + maxTokens > count.contextLength
  return { text: `${count.promptTokens} + ${maxTokens} tokens of ${count.contextLength}`, over }
}

/** Why a prompt is not sent: it and the answer's max tokens do not fit in the model's context. */
export function contextRefusal(count: ChatCount, maxTokens: number): ShownError {
  const total = count.promptTokens + maxTokens
  return {
    code: 'context_exceeded',
    message:
      `This prompt is ${count.promptTokens} tokens and the answer may take ${maxTokens} more: ${total} is ` +
      `past the model's context of ${count.contextLength} tokens. Shorten it, start a new chat, or lower max tokens.`,
  }
}
