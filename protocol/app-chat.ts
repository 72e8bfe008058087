import { z } from 'zod'
import {
  ChatCount,
  ChatCountRequest,
  ChatId,
  ChatRequest,
  Conversation,
  MAX_CONVERSATION_CHARS,
  SystemPromptPreset,
  SystemPromptPresets,
} from './chat'
import { Count, ModelId } from './manifest'
import { rpc } from './rpc'

// Chat with the swarm's models, and the conversations kept in the data dir: the Chat screen's part of the app's
// contract (protocol/app.ts); protocol/chat.ts holds the schemas.

const Empty = z.object({}).strict()

/** chat.*: an answer streamed as chat.* events (AppEvents), and the prompt's token count. */
export const ChatMethods = {
  /** Starts an answer; tokens arrive as chat.token events, then chat.done or chat.error. */
  'chat.send': rpc(ChatRequest, z.object({ chatId: ChatId })),
  'chat.stop': rpc(z.object({ chatId: ChatId }).strict(), Empty),
  /**
   * Counts a conversation's prompt tokens with the model's tokenizer and template, and says the model's context length.
   */
  'chat.count': rpc(ChatCountRequest, ChatCount),
  /** The model's context length (its manifest's), before there is a prompt to count: max tokens is bounded by it. */
  'chat.context': rpc(z.object({ modelId: ModelId }).strict(), z.object({ contextLength: Count })),
} as const

/** conversations.*: the chats kept on this computer. */
export const ConversationMethods = {
  /** Every conversation kept in the data dir; unreadable: files that could not be read, each kept aside, in words. */
  'conversations.list': rpc(Empty, z.object({ conversations: z.array(Conversation), unreadable: z.array(z.string()) })),
  /** Keeps a conversation (a new one, or a new version of one), written durably before the answer. */
  'conversations.save': rpc(
    z
      .object({
        conversation: Conversation.refine(
          (c) => JSON.stringify(c).length <= MAX_CONVERSATION_CHARS,
          `a conversation is kept up to ${MAX_CONVERSATION_CHARS} characters; start a new chat to go on`,
        ),
      })
      .strict(),
    Empty,
  ),
  'conversations.delete': rpc(z.object({ id: ChatId }).strict(), Empty),
  /** The system prompts kept by name (system-prompts.json in the data dir), by name. */
  'conversations.presets': rpc(Empty, z.object({ presets: SystemPromptPresets })),
  /** Keeps a system prompt under its name (replacing one of that name); the presets as they are now. */
  'conversations.savePreset': rpc(
    z.object({ preset: SystemPromptPreset }).strict(),
    z.object({ presets: SystemPromptPresets }),
  ),
  'conversations.deletePreset': rpc(
    z.object({ name: z.string().min(1).max(64) }).strict(),
    z.object({ presets: SystemPromptPresets }),
  ),
} as const
