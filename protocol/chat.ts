import { z } from 'zod'
import { BlockRange } from './blocks'
import { NodeId } from './identity'
import { Count, ModelId } from './manifest'

// The app's chat as its renderer and backend exchange it (protocol/app.ts): requests, answers and conversations kept.

export const ChatId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a chat id is 1–64 letters, digits, _ or -')

export const ChatMessage = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })
export type ChatMessage = z.infer<typeof ChatMessage>

export const ChatRequest = z.object({
  chatId: ChatId,
  modelId: ModelId,
  /** The conversation so far, ending with the user's turn; rendered with the model's chat template. */
  messages: z.array(ChatMessage).min(1).max(512),
  maxTokens: z.number().int().positive().max(4096).default(128),
  /** 0: greedy. */
  temperature: z.number().min(0).max(2).default(0),
  seed: z.number().int().nonnegative().default(0),
})
export type ChatRequest = z.input<typeof ChatRequest>

export const ChatHop = z.object({
  hostId: NodeId,
  blocks: BlockRange,
  medianMs: z.number().nonnegative().nullable(),
  /** No second host serves its blocks to check it against (the route's `unaudited`). */
  unaudited: z.boolean().optional(),
})
export type ChatHop = z.infer<typeof ChatHop>

export const ChatSummary = z.object({
  chatId: ChatId,
  promptTokens: Count,
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

/** One turn of a kept conversation, as the chat screen shows it. */
export const ChatEntry = z.object({
  id: z.string().min(1).max(64),
  role: z.enum(['user', 'assistant']),
  content: z.string().max(MAX_CONVERSATION_CHARS),
  createdAt: z.number(),
  /** Assistant answers only. */
  status: z.enum(['streaming', 'done', 'error']).optional(),
  modelId: ModelId.optional(),
  route: z.array(ChatHop).max(1024).optional(),
  summary: ChatSummary.optional(),
  /** Why the answer failed, as it was shown. */
  error: z.object({ code: z.string().max(64), message: z.string().max(8192), detail: z.string().max(8192).optional() }).optional(),
})
export type ChatEntry = z.infer<typeof ChatEntry>

/** A conversation the backend keeps in the data dir (conversations.*). */
export const Conversation = z.object({
  /** Also the chatId of chat.send: events name the conversation they belong to. */
  id: ChatId,
  title: z.string().max(256),
  modelId: ModelId.nullable(),
  messages: z.array(ChatEntry).max(4096),
  createdAt: z.number(),
  updatedAt: z.number(),
})
export type Conversation = z.infer<typeof Conversation>
