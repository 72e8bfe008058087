import { RotateCcw, SendHorizontal, Square } from 'lucide-react'
import { useState } from 'react'

interface ComposerProps {
  streaming: boolean
  canRegenerate: boolean
  onSend(text: string): void
  onStop(): void
  onRegenerate(): void
}

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform)

export function Composer({ streaming, canRegenerate, onSend, onStop, onRegenerate }: ComposerProps) {
  const [text, setText] = useState('')
  const send = () => {
    if (text.trim() === '' || streaming) return
    onSend(text)
    setText('')
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
          <button type="button" className="button primary" onClick={send} disabled={text.trim() === ''} data-testid="chat-send">
            <SendHorizontal size={16} aria-hidden /> Send
          </button>
        )}
      </div>
    </div>
  )
}
