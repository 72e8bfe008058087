import {
  type ChatCount,
  type ChatMessage,
  type ChatSettings,
  DEFAULT_CHAT_SETTINGS,
  MAX_STOP_CHARS,
  MAX_STOP_SEQUENCES,
  SAMPLING_BOUNDS,
} from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import type { Conversation } from './initialState'
import { requestMessages } from './selectors'

/** The chat's number fields: the conversation's sampling, and max tokens. */
export type NumberField = 'temperature' | 'topP' | 'topK' | 'minP' | 'repeatPenalty' | 'seed' | 'maxTokens'

export const FIELD_LABELS: Record<NumberField, string> = {
  temperature: 'Temperature',
  topP: 'Top-p',
  topK: 'Top-k',
  minP: 'Min-p',
  repeatPenalty: 'Repetition penalty',
  seed: 'Seed',
  maxTokens: 'Max tokens',
}

const WHOLE: ReadonlySet<NumberField> = new Set(['topK', 'seed', 'maxTokens'])

export type ParsedField = { ok: true; value: number | null } | { ok: false; message: string }

/**
 * A field's text as the number it stands for (seed: empty is null, random each time), or what is wrong with it, in
 * words. `limit`: a tighter max than the field's own (max tokens: the model's context).
 */
export function parseField(field: NumberField, text: string, limit?: number): ParsedField {
  const { min } = SAMPLING_BOUNDS[field]
  const max = Math.min(SAMPLING_BOUNDS[field].max, limit ?? Number.POSITIVE_INFINITY)
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

/** A conversation's settings; those kept before a setting existed get its default. */
export function conversationSettings(conversation: Conversation | null): Required<ChatSettings> {
  return { ...DEFAULT_CHAT_SETTINGS, ...conversation?.settings }
}

/**
 * The stop sequences field's text as the sequences: one a line, `\n` and `\t` standing for a line break and a tab;
 * blank lines skipped. Or what is wrong with them, in words.
 */
export function parseStops(text: string): { ok: true; value: string[] } | { ok: false; message: string } {
  const stops = text
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => line.replaceAll('\\n', '\n').replaceAll('\\t', '\t'))
  if (stops.length > MAX_STOP_SEQUENCES)
    return { ok: false, message: `Stop sequences: up to ${MAX_STOP_SEQUENCES}, one a line; ${stops.length} given.` }
  const long = stops.find((s) => s.length > MAX_STOP_CHARS)
  if (long !== undefined)
    return {
      ok: false,
      message: `Stop sequences: each up to ${MAX_STOP_CHARS} characters; "${long.slice(0, 20)}…" is ${long.length}.`,
    }
  return { ok: true, value: stops }
}

/** Stop sequences as the field shows them: one a line, a line break or tab in one written `\n` or `\t`. */
export function stopsText(stops: readonly string[]): string {
  return stops.map((s) => s.replaceAll('\n', '\\n').replaceAll('\t', '\\t')).join('\n')
}

/** The turns chat.send and chat.count carry: the system prompt first when there is one, then the conversation's. */
export function promptMessages(conversation: Conversation, draft?: string): ChatMessage[] {
  const { systemPrompt } = conversationSettings(conversation)
  const system: ChatMessage[] = systemPrompt.trim() === '' ? [] : [{ role: 'system', content: systemPrompt }]
  const user: ChatMessage[] =
    draft === undefined || draft.trim() === '' ? [] : [{ role: 'user', content: draft.trim() }]
  return [...system, ...requestMessages(conversation.messages), ...user]
}

/**
 * The sampling chat.send carries for a conversation; no seed when it is random, so each answer draws a fresh one, and
 * no stop sequences when there are none.
 */
export function samplingRequest(settings: Required<ChatSettings>) {
  const { temperature, topP, topK, minP, repeatPenalty, seed, stop } = settings
  return {
    temperature,
    topP,
    topK,
    minP,
    repeatPenalty,
    ...(seed === null ? {} : { seed }),
    ...(stop.length === 0 ? {} : { stop }),
  }
}

/** How the prompt and the answer fill the model's context, shown beside the composer. */
export interface ContextFit {
  text: string
  /** The prompt alone fills the context: no room is left for an answer. */
  over: boolean
  /** Max tokens for this prompt: what the user set, or less where the context leaves less (capped). */
  maxTokens: number
  capped: boolean
}

/** Max tokens as set, capped to what the model's context leaves after the prompt. */
export function contextFit(count: ChatCount, maxTokens: number): ContextFit {
  const room = count.contextLength - count.promptTokens
  const answer = Math.max(0, Math.min(maxTokens, room))
  const capped = answer < maxTokens && room > 0
  // Over: the answer as set, which cannot fit at all.
  const text = `${count.promptTokens} + ${room < 1 ? maxTokens : answer} tokens of ${count.contextLength}`
  return { text: capped ? `${text} · max tokens capped to fit` : text, over: room < 1, maxTokens: answer, capped }
}

/** Why a prompt is not sent: it leaves no room in the model's context for an answer. */
export function contextRefusal(count: ChatCount): ShownError {
  return {
    code: 'context_exceeded',
    message:
      `This prompt is ${count.promptTokens} tokens, past the model's context of ${count.contextLength} tokens: ` +
      `no room is left for an answer. Shorten it or start a new chat.`,
  }
}
