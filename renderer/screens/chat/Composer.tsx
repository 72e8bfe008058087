import { RotateCcw, SendHorizontal, Square } from 'lucide-react'
import { type KeyboardEvent, useEffect, useState } from 'react'
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

/**
 * Enter sends (Ctrl/⌘+Enter too); Shift+Enter is a new line. An Enter that ends an IME composition (picking a word
 * in Japanese or Chinese input) only ends it: isComposing, or keyCode 229 where a browser reports that instead.
 */
function sendsOnEnter(event: KeyboardEvent<HTMLTextAreaElement>): boolean {
  if (event.key !== 'Enter' || event.shiftKey || event.altKey) return false
  return !event.nativeEvent.isComposing && event.nativeEvent.keyCode !== 229
}

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
        placeholder="Write a message… (Enter to send, Shift+Enter for a new line, Esc to stop)"
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (sendsOnEnter(event)) {
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
            title={
              fit.capped
                ? "Prompt tokens + the answer's max tokens, lowered to what the model's context leaves"
                : "Prompt tokens + the answer's max tokens, of the model's context"
            }
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
