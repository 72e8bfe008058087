import { RotateCcw, SendHorizontal, Square } from 'lucide-react'
import { useEffect, useState } from 'react'
import type { ContextFit } from '../../stores/chat/fields'

interface ComposerProps {
  streaming: boolean
  canRegenerate: boolean
  /** How the conversation with this text fills the model's context; null until counted. */
  fit: ContextFit | null
  /** Resolves false when the text was not sent (it stays in the box). */
  onSend(text: string): Promise<boolean>
  /** The text as the user types it, to count its tokens. */
  onDraft(text: string): void
  onStop(): void
  onRegenerate(): void
}

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform)

export function Composer({ streaming, canRegenerate, fit, onSend, onDraft, onStop, onRegenerate }: ComposerProps) {
  const [text, setText] = useState('')
  const [sending, setSending] = useState(false)
  useEffect(() => onDraft(text), [text, onDraft])
  const send = () => {
    if (text.trim() === '' || streaming || sending) return
    setSending(true)
    void onSend(text)
      .then((sent) => sent && setText(''))
      .finally(() => setSending(false))
  }
  return (
    <div className="composer">
      <textarea
        className="input"
        rows={3}
        value={text}
        placeholder={`Write a message… (${isMac ? '⌘' : 'Ctrl'}+Enter to send, Esc to stop)`}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
            event.preventDefault()
            send()
          }
        }}
        data-testid="chat-input"
        aria-label="Message"
      />
      <div className="composer-actions">
        {fit !== null && (
          <span
            className={`context-fit small ${fit.over ? 'over' : 'muted'}`}
            data-testid="chat-context"
            data-over={fit.over}
            title="Prompt tokens + max tokens, of the model's context"
          >
            {fit.text}
          </span>
        )}
        <button
          type="button"
          className="button"
          onClick={onRegenerate}
          disabled={!canRegenerate}
          data-testid="chat-regenerate"
          title="Ask again for the last answer"
        >
          <RotateCcw size={16} aria-hidden /> Regenerate
        </button>
        {streaming ? (
          <button type="button" className="button danger" onClick={onStop} data-testid="chat-stop">
            <Square size={16} aria-hidden /> Stop
          </button>
        ) : (
          <button
            type="button"
            className="button primary"
            onClick={send}
            disabled={text.trim() === '' || sending}
            data-testid="chat-send"
          >
            <SendHorizontal size={16} aria-hidden /> Send
          </button>
        )}
      </div>
    </div>
  )
}
