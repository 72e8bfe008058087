import { z } from 'zod'
import { BlockRange } from './blocks'
import { NodeId } from './identity'
import { Count, ModelId } from './manifest'

// The app's chat as its renderer and backend exchange it (protocol/app.ts): requests, answers and conversations kept.

export const ChatId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a chat id is 1–64 letters, digits, _ or -')

export const ChatMessage = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })
export type ChatMessage = z.infer<typeof ChatMessage>

/**
 * Bounds of the sampling a chat may ask for, shared by the contract and the renderer's fields. The host's
 * SamplingParams (protocol/frames.ts) accepts wider ranges; these are the ones a person has use for.
 */
export const SAMPLING_BOUNDS = {
  /** 0: greedy. */
  temperature: { min: 0, max: 2 },
  /** 1: off. */
  topP: { min: 0.01, max: 1 },
  /** 0: off. */
  topK: { min: 0, max: 1000 },
  /** 1: off; above 1 discourages repeating the last 64 tokens. */
  repeatPenalty: { min: 0.5, max: 2 },
  /** 0: off; else only tokens at least this share as likely as the likeliest are drawn. */
  minP: { min: 0, max: 1 },
  seed: { min: 0, max: 0xffff_ffff },
  maxTokens: { min: 1, max: 4096 },
} as const
/** Stop sequences a chat may ask for (OpenAI's bound), and each one's length in characters. */
export const MAX_STOP_SEQUENCES = 4
export const MAX_STOP_CHARS = 64
/** Strings that end the answer where it first contains one; the answer excludes it. */
export const StopSequences = z
  .array(
    z
      .string()
      .min(1, 'a stop sequence is not empty')
      .max(MAX_STOP_CHARS, `a stop sequence is up to ${MAX_STOP_CHARS} characters`),
  )
  .max(MAX_STOP_SEQUENCES, `up to ${MAX_STOP_SEQUENCES} stop sequences`)
/** A system prompt, in characters. */
export const MAX_SYSTEM_PROMPT_CHARS = 8192
/**
 * What chat.send and chat.count take of a conversation's text: far past any context, small enough to tokenize at once.
 */
export const MAX_PROMPT_CHARS = 256_000

/** A number in `bounds` (whole with `int`), refused with a message naming the field and its range. */
function bounded(name: string, bounds: { min: number; max: number }, int = false) {
  const error = `${name} must be ${int ? 'a whole number' : 'a number'} from ${bounds.min} to ${bounds.max}`
  const number = z.number({ error }).min(bounds.min, error).max(bounds.max, error)
  return int ? number.int(error) : number
}
const boundedInt = (name: string, bounds: { min: number; max: number }) => bounded(name, bounds, true)

/** The turns of a chat, bounded in number and in characters all together. */
export const ChatMessages = z
  .array(ChatMessage)
  .min(1)
  .max(512)
  .refine((ms) => ms.reduce((n, m) => n + m.content.length, 0) <= MAX_PROMPT_CHARS, {
    message: `a chat's turns take up to ${MAX_PROMPT_CHARS} characters all together; start a new chat or shorten it`,
  })

export const ChatRequest = z.object({
  chatId: ChatId,
  modelId: ModelId,
  /** The conversation so far, ending with the user's turn; rendered with the model's chat template. */
  messages: ChatMessages,
  maxTokens: boundedInt('maxTokens', SAMPLING_BOUNDS.maxTokens).default(128),
  temperature: bounded('temperature', SAMPLING_BOUNDS.temperature).default(0),
  topP: bounded('topP', SAMPLING_BOUNDS.topP).optional(),
  topK: boundedInt('topK', SAMPLING_BOUNDS.topK).optional(),
  repeatPenalty: bounded('repeatPenalty', SAMPLING_BOUNDS.repeatPenalty).optional(),
  minP: bounded('minP', SAMPLING_BOUNDS.minP).optional(),
  /** The answer ends where its text first contains one of these, which it leaves out (finishReason 'stop'). */
  stop: StopSequences.optional(),
  /** Absent: a fresh random seed for every answer (so regenerating samples anew). */
  seed: boundedInt('seed', SAMPLING_BOUNDS.seed).optional(),
})
export type ChatRequest = z.input<typeof ChatRequest>

/** chat.count: how many tokens a conversation's prompt takes with the model's template, and the model's context. */
export const ChatCountRequest = z.object({ modelId: ModelId, messages: ChatMessages }).strict()
export const ChatCount = z.object({
  promptTokens: Count,
  /** The model's context length (its manifest's): prompt plus answer must fit in it. */
  contextLength: Count,
})
export type ChatCount = z.infer<typeof ChatCount>

/** How a conversation asks for its answers; absent from conversations kept before these could be chosen. */
export const ChatSettings = z.object({
  /** Sent as the system turn first; '' for none. */
  systemPrompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS),
  temperature: bounded('temperature', SAMPLING_BOUNDS.temperature),
  topP: bounded('topP', SAMPLING_BOUNDS.topP),
  topK: boundedInt('topK', SAMPLING_BOUNDS.topK),
  repeatPenalty: bounded('repeatPenalty', SAMPLING_BOUNDS.repeatPenalty),
  /** null: random for every answer. */
  seed: boundedInt('seed', SAMPLING_BOUNDS.seed).nullable(),
  /** Absent from conversations kept before it could be chosen: the default. */
  minP: bounded('minP', SAMPLING_BOUNDS.minP).optional(),
  /** Absent from conversations kept before they could be chosen: none. */
  stop: StopSequences.optional(),
})
export type ChatSettings = z.infer<typeof ChatSettings>

/**
 * llama.cpp's defaults (top-k 40, top-p 0.95, min-p 0.05, no repeat penalty)
 * at a slightly cooler temperature; a fresh seed per answer; no stop sequence.
 */
export const DEFAULT_CHAT_SETTINGS: Required<ChatSettings> = {
  systemPrompt: '',
  temperature: 0.7,
  topP: 0.95,
  topK: 40,
  repeatPenalty: 1,
  seed: null,
  minP: 0.05,
  stop: [],
}

export const ChatHop = z.object({
  hostId: NodeId,
  blocks: BlockRange,
  medianMs: z.number().nonnegative().nullable(),
  /** No second host serves its blocks to check it against (the route's `unaudited`). */
  unaudited: z.boolean().optional(),
  /** Who re-runs its steps when a session is audited: other hosts of its blocks, or the tracker (route's). */
  auditedBy: z.enum(['twins', 'tracker']).optional(),
  /** Twins paid to stand by for its audits (the route's `standby`). */
  standby: z.number().int().min(1).max(8).optional(),
})
export type ChatHop = z.infer<typeof ChatHop>

export const ChatSummary = z.object({
  chatId: ChatId,
  promptTokens: Count,
  /** Of the prompt, the tokens the conversation's session already held on its hops: not sent or computed again. */
  cachedTokens: Count.optional(),
  completionTokens: Count,
  finishReason: z.enum(['stop', 'length', 'aborted']),
  tokensPerSecond: z.number().nonnegative(),
  route: z.array(ChatHop),
  /** Micro-credits the account paid for this answer (settled receipts). */
  chargedMicro: Count,
})
export type ChatSummary = z.infer<typeof ChatSummary>

/** Bounds of a kept conversation: far past what a person types, small enough to load them all at start. */
export const MAX_CONVERSATION_CHARS = 1_000_000
export const MAX_CONVERSATIONS = 1000

/** Answers kept per turn: the one shown and those it replaced by regenerating. */
export const MAX_ANSWER_VERSIONS = 32

/** An answer as a kept conversation holds it: the one shown, or one kept beside it (`alternatives`). */
export const AnswerVersion = z.object({
  id: z.string().min(1).max(64),
  content: z.string().max(MAX_CONVERSATION_CHARS),
  createdAt: z.number(),
  status: z.enum(['streaming', 'done', 'error']).optional(),
  modelId: ModelId.optional(),
  route: z.array(ChatHop).max(1024).optional(),
  summary: ChatSummary.optional(),
  /** Why the answer failed, as it was shown. */
  error: z
    .object({ code: z.string().max(64), message: z.string().max(8192), detail: z.string().max(8192).optional() })
    .optional(),
})
export type AnswerVersion = z.infer<typeof AnswerVersion>

/**
 * One turn of a kept conversation, as the chat screen shows it. An answer regenerated keeps the ones it replaced in
 * `alternatives`, in order, with its own place among them at `chosen` (absent from conversations kept before: none).
 */
export const ChatEntry = AnswerVersion.extend({
  role: z.enum(['user', 'assistant']),
  alternatives: z
    .array(AnswerVersion)
    .max(MAX_ANSWER_VERSIONS - 1)
    .optional(),
  chosen: z.number().int().min(0).max(MAX_ANSWER_VERSIONS).optional(),
})
export type ChatEntry = z.infer<typeof ChatEntry>

/** A conversation the backend keeps in the data dir (conversations.*). */
export const Conversation = z.object({
  /** Also the chatId of chat.send: events name the conversation they belong to. */
  id: ChatId,
  title: z.string().max(256),
  modelId: ModelId.nullable(),
  settings: ChatSettings.optional(),
  messages: z.array(ChatEntry).max(4096),
  createdAt: z.number(),
  updatedAt: z.number(),
})
export type Conversation = z.infer<typeof Conversation>

/** System prompts kept by name, to pick for a chat. */
export const MAX_SYSTEM_PROMPT_PRESETS = 100
export const SystemPromptPreset = z.object({
  name: z.string().trim().min(1, 'a preset needs a name').max(64, 'a preset name is up to 64 characters'),
  prompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS),
})
export type SystemPromptPreset = z.infer<typeof SystemPromptPreset>
export const SystemPromptPresets = z.array(SystemPromptPreset).max(MAX_SYSTEM_PROMPT_PRESETS)
