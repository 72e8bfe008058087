import { MessageSquare, Plus, Trash2 } from 'lucide-react'
import type { Conversation } from '../../stores/chat/initialState'
import { conversationList, streamingAnswer } from '../../stores/chat/selectors'

interface ConversationListProps {
  conversations: Conversation[]
  activeId: string | null
  onNew(): void
  onSelect(id: string): void
  onDelete(id: string): void
}

export function ConversationList({ conversations, activeId, onNew, onSelect, onDelete }: ConversationListProps) {
  return (
    <aside className="conversations">
      <button type="button" className="button primary full" onClick={onNew} data-testid="chat-new">
        <Plus size={16} aria-hidden /> New chat
      </button>
      <ul>
        {conversationList(conversations).map((c) => (
          <li key={c.id} className={c.id === activeId ? 'active' : ''} data-testid="chat-conversation" data-chat-id={c.id}>
            <button type="button" className="conversation-title" onClick={() => onSelect(c.id)} aria-current={c.id === activeId}>
              <MessageSquare size={14} aria-hidden />
              <span>{c.title}</span>
              {streamingAnswer(c) !== null && <span className="dot streaming" title="answering" />}
            </button>
            <button type="button" className="icon-button subtle" onClick={() => onDelete(c.id)} title="Delete this conversation" data-testid="chat-delete">
              <Trash2 size={14} aria-label="Delete this conversation" />
            </button>
          </li>
        ))}
      </ul>
      {conversations.length === 0 && <p className="muted small empty">Conversations are kept in this computer's data folder.</p>}
    </aside>
  )
}
