import { Undo2, X } from 'lucide-react'
import { useEffect } from 'react'

/** How long a deleted turn can be put back. */
const UNDO_MS = 10_000

/** "Message deleted · Undo" under the thread, for a while after a turn is deleted. */
export function UndoDelete({ role, onUndo, onForget }: { role: string; onUndo(): void; onForget(): void }) {
  useEffect(() => {
    const timer = setTimeout(onForget, UNDO_MS)
    return () => clearTimeout(timer)
  }, [onForget])
  return (
    <div className="undo-delete small" role="status" data-testid="chat-undo-delete">
      <span>{role === 'user' ? 'Your message was deleted.' : 'The answer was deleted.'}</span>
      <button type="button" className="button" onClick={onUndo} data-testid="chat-undo">
        <Undo2 size={14} aria-hidden /> Undo
      </button>
      <button type="button" className="icon-button" onClick={onForget} title="Dismiss">
        <X size={14} aria-label="Dismiss" />
      </button>
    </div>
  )
}
