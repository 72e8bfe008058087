import { MessageSquare, Pencil, Plus, Search, Trash2, Upload } from 'lucide-react'
import { useRef, useState } from 'react'
import type { ShownError } from '../../api/errorText'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorNote } from '../../components/ErrorNote'
import { searchConversations } from '../../stores/chat/export'
import type { Conversation } from '../../stores/chat/initialState'
import { conversationList, streamingAnswer } from '../../stores/chat/selectors'

interface ConversationListProps {
  conversations: Conversation[]
  activeId: string | null
  onNew(): void
  onSelect(id: string): void
  onDelete(id: string): void
  onRename(id: string, title: string): void
  /** A conversation file picked or dropped on the list, to import. */
  onImport(file: File): void
  /** Why the last file was not imported. */
  importError: ShownError | null
}

export function ConversationList({
  conversations,
  activeId,
  onNew,
  onSelect,
  onDelete,
  onRename,
  onImport,
  importError,
}: ConversationListProps) {
  const [query, setQuery] = useState('')
  const [dropping, setDropping] = useState(false)
  const picker = useRef<HTMLInputElement>(null)
  const [renaming, setRenaming] = useState<string | null>(null)
  const [deleting, setDeleting] = useState<Conversation | null>(null)
  const shown = searchConversations(conversationList(conversations), query)
  return (
    <aside
      className={`conversations${dropping ? ' dropping' : ''}`}
      // A conversation file dropped anywhere on the list is imported.
      onDragOver={(event) => {
        if (!event.dataTransfer.types.includes('Files')) return
        event.preventDefault()
        setDropping(true)
      }}
      onDragLeave={() => setDropping(false)}
      onDrop={(event) => {
        event.preventDefault()
        setDropping(false)
        const file = event.dataTransfer.files[0]
        if (file !== undefined) onImport(file)
      }}
      data-testid="chat-conversations"
    >
      <div className="conversation-buttons">
        <button type="button" className="button primary" onClick={onNew} data-testid="chat-new">
          <Plus size={16} aria-hidden /> New chat
        </button>
        <button
          type="button"
          className="button"
          onClick={() => picker.current?.click()}
          title="Import a conversation: a JSON file exported by this app, or an OpenAI-style {messages: [...]} chat"
          data-testid="chat-import"
        >
          <Upload size={16} aria-hidden /> Import
        </button>
        <input
          ref={picker}
          type="file"
          accept=".json,application/json"
          hidden
          onChange={(event) => {
            const file = event.target.files?.[0]
            if (file !== undefined) onImport(file)
            // The same file picked again is imported again.
            event.target.value = ''
          }}
          data-testid="chat-import-file"
        />
      </div>
      <ErrorNote error={importError} testId="chat-import-error" />
      {conversations.length > 0 && (
        <label className="conversation-search">
          <Search size={14} aria-hidden />
          <input
            className="input"
            type="search"
            value={query}
            placeholder="Search chats"
            aria-label="Search conversations"
            onChange={(event) => setQuery(event.target.value)}
            data-testid="chat-search"
          />
        </label>
      )}
      <ul>
        {shown.map((c) => (
          <li
            key={c.id}
            className={c.id === activeId ? 'active' : ''}
            data-testid="chat-conversation"
            data-chat-id={c.id}
          >
            {renaming === c.id ? (
              <RenameField
                title={c.title}
                onDone={(title) => {
                  if (title !== null) onRename(c.id, title)
                  setRenaming(null)
                }}
              />
            ) : (
              <>
                <button
                  type="button"
                  className="conversation-title"
                  onClick={() => onSelect(c.id)}
                  aria-current={c.id === activeId}
                >
                  <MessageSquare size={14} aria-hidden />
                  <span>{c.title}</span>
                  {streamingAnswer(c) !== null && <span className="dot streaming" title="answering" />}
                </button>
                <button
                  type="button"
                  className="icon-button subtle"
                  onClick={() => setRenaming(c.id)}
                  title="Rename this conversation"
                  data-testid="chat-rename"
                >
                  <Pencil size={14} aria-label="Rename this conversation" />
                </button>
                <button
                  type="button"
                  className="icon-button subtle"
                  onClick={() => setDeleting(c)}
                  title="Delete this conversation"
                  data-testid="chat-delete"
                >
                  <Trash2 size={14} aria-label="Delete this conversation" />
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      {deleting !== null && (
        <ConfirmDialog
          title="Delete this conversation?"
          confirmLabel="Delete"
          onConfirm={() => {
            onDelete(deleting.id)
            setDeleting(null)
          }}
          onCancel={() => setDeleting(null)}
          testId="chat-delete-dialog"
        >
          “{deleting.title}” and all its messages are removed from this computer. This cannot be undone.
        </ConfirmDialog>
      )}
      {conversations.length === 0 && (
        <p className="muted small empty">Conversations are kept in this computer's data folder.</p>
      )}
      {conversations.length > 0 && shown.length === 0 && (
        <p className="muted small empty">No conversation mentions “{query.trim()}”.</p>
      )}
    </aside>
  )
}

/** The title being edited: Enter or leaving keeps it, Escape drops it (null). */
function RenameField({ title, onDone }: { title: string; onDone(title: string | null): void }) {
  const [text, setText] = useState(title)
  // Enter or Escape ends it; the blur that follows must not end it again.
  const ended = useRef(false)
  const end = (title: string | null) => {
    if (ended.current) return
    ended.current = true
    onDone(title)
  }
  return (
    <input
      className="input rename"
      value={text}
      maxLength={256}
      aria-label="Conversation name"
      // biome-ignore lint/a11y/noAutofocus: the user just asked to rename it
      autoFocus
      onChange={(event) => setText(event.target.value)}
      onBlur={() => end(text)}
      onKeyDown={(event) => {
        // Escape here cancels the rename, not the answer streaming.
        event.stopPropagation()
        if (event.key === 'Enter') end(text)
        if (event.key === 'Escape') end(null)
      }}
      data-testid="chat-rename-input"
    />
  )
}
