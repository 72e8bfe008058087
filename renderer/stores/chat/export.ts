import type { Conversation } from './initialState'

/** A conversation as Markdown: its title, then each turn under who said it; failed answers say so. */
export function conversationMarkdown(conversation: Conversation): string {
  const { systemPrompt } = conversation.settings ?? { systemPrompt: '' }
  const parts = [`# ${conversation.title}`]
  if (conversation.modelId !== null) parts.push(`Model: ${conversation.modelId}`)
  if (systemPrompt.trim() !== '') parts.push(`## System\n\n${systemPrompt.trim()}`)
  for (const m of conversation.messages) {
    const failed = m.status === 'error' ? `*(failed: ${m.error?.message ?? 'no answer'})*` : ''
    const text = [m.content, failed].filter((t) => t !== '').join('\n\n')
    parts.push(`## ${m.role === 'user' ? 'You' : 'Assistant'}\n\n${text}`)
  }
  return `${parts.join('\n\n')}\n`
}

/** The conversation exactly as the app keeps it (the contract's Conversation), for re-reading by a program. */
export function conversationJson(conversation: Conversation): string {
  return `${JSON.stringify(conversation, null, 2)}\n`
}

/** A file name from the title: letters, digits and dashes only. */
export function exportFileName(conversation: Conversation, extension: 'json' | 'md'): string {
  const stem = conversation.title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
  return `${stem || 'conversation'}.${extension}`
}

/** Conversations whose title or turns contain every word of `query` (any case); all of them for a blank query. */
export function searchConversations(conversations: Conversation[], query: string): Conversation[] {
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '')
  if (words.length === 0) return conversations
  return conversations.filter((c) => {
    const text = [c.title, ...c.messages.map((m) => m.content)].join('\n').toLowerCase()
    return words.every((w) => text.includes(w))
  })
}
