import { z } from 'zod'
import {
  type ChatEntry,
  Conversation,
  DEFAULT_CHAT_SETTINGS,
  MAX_CONVERSATION_CHARS,
  MAX_SYSTEM_PROMPT_CHARS,
} from '../../../protocol/app'
import { interrupted } from './history'
import { titleFrom } from './selectors'

// A conversation file read back: the JSON this app exports (export.ts: the contract's Conversation), or the common
// OpenAI-style chat, {"messages": [{"role", "content"}]} (content a string or text parts; a system turn becomes the
// system prompt). Parsed with zod; anything else is refused, saying why.

/** OpenAI's content: a string, or parts of which the text ones are kept. */
const Content = z.union([
  z.string(),
  z.array(z.union([z.object({ type: z.literal('text'), text: z.string() }), z.object({ type: z.string() })])),
])
const OpenAiChat = z.object({
  title: z.string().optional(),
  model: z.string().optional(),
  messages: z
    .array(z.object({ role: z.enum(['system', 'developer', 'user', 'assistant']), content: Content.nullable() }))
    .min(1, 'the chat has no messages')
    .max(4096),
})

const textOf = (content: z.infer<typeof Content> | null): string =>
  content === null
    ? ''
    : typeof content === 'string'
      ? content
      : content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('')

export type ImportedConversation = { ok: true; conversation: Conversation } | { ok: false; message: string }

/**
 * The conversation a file holds, under a new id (an import never replaces a conversation kept here), or why it is not
 * one, naming the file. `modelId`: the model for a chat that names none the tracker lists.
 */
export function importConversation(
  fileName: string,
  text: string,
  options: { newId(): string; now(): number; modelIds: readonly string[]; modelId: string | null },
): ImportedConversation {
  const refuse = (why: string): ImportedConversation => ({
    ok: false,
    message:
      `${fileName} was not imported: ${why}. Import a chat exported by this app (JSON) or an OpenAI-style ` +
      '{"messages": [{"role", "content"}]} file.',
  })
  if (text.length > MAX_CONVERSATION_CHARS) return refuse(`it is over ${MAX_CONVERSATION_CHARS} characters`)
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return refuse('it is not JSON')
  }
  const ours = Conversation.safeParse(raw)
  if (ours.success) {
    const c = interrupted(ours.data)
    return { ok: true, conversation: { ...c, id: options.newId(), updatedAt: options.now() } }
  }
  const theirs = OpenAiChat.safeParse(raw)
  if (!theirs.success) {
    const issue = theirs.error.issues[0]
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`
    return refuse(`it is neither format (${issue?.message ?? 'unknown shape'}${where})`)
  }
  const { messages, model, title } = theirs.data
  const system = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => textOf(m.content))
    .join('\n\n')
  if (system.length > MAX_SYSTEM_PROMPT_CHARS)
    return refuse(`its system prompt is over ${MAX_SYSTEM_PROMPT_CHARS} characters`)
  const now = options.now()
  const modelId = model !== undefined && options.modelIds.includes(model) ? model : options.modelId
  const turns = messages.flatMap((m): ChatEntry[] =>
    m.role === 'user' || m.role === 'assistant'
      ? [
          {
            id: options.newId(),
            role: m.role,
            content: textOf(m.content),
            createdAt: now,
            ...(m.role === 'assistant' ? { status: 'done' as const } : {}),
          },
        ]
      : [],
  )
  if (turns.length === 0) return refuse('it has no user or assistant turn')
  const conversation = Conversation.safeParse({
    id: options.newId(),
    title: titleFrom(title ?? turns.find((t) => t.role === 'user')?.content ?? turns[0]?.content ?? ''),
    modelId,
    settings: { ...DEFAULT_CHAT_SETTINGS, systemPrompt: system },
    messages: turns,
    createdAt: now,
    updatedAt: now,
  })
  return conversation.success
    ? { ok: true, conversation: conversation.data }
    : refuse(conversation.error.issues[0]?.message ?? 'it does not fit a conversation')
}
