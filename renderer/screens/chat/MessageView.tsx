import { ChevronLeft, ChevronRight, Pencil, Route, Trash2 } from 'lucide-react'
import { useState } from 'react'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { versionPosition } from '../../stores/chat/alternatives'
import type { ChatEntry } from '../../stores/chat/initialState'
import { answerStats, hopViews } from '../../stores/chat/selectors'
import { UNAUDITED_EXPLAINED } from '../../words'
import { Markdown } from './Markdown'

interface MessageViewProps {
  message: ChatEntry
  /** Replaces a user's turn and asks again from there; absent while that cannot be done (an answer streaming). */
  onResend?: (text: string) => Promise<boolean>
  /** Shows the answer's version at `index` (0-based) of those regenerated; absent while an answer streams. */
  onShow?: (index: number) => void
  /** Takes this turn out of the conversation (it can be put back); absent while an answer streams. */
  onDelete?: () => void
  /** This computer's host: its hops are marked, and an answer it served alone says it was free (local use). */
  ownHostId?: string | null
}

export function MessageView({ message, onResend, onShow, onDelete, ownHostId = null }: MessageViewProps) {
  const hops = hopViews(message, ownHostId)
  const [editing, setEditing] = useState(false)
  // A failed answer that never got a token shows its error card only, not an empty bubble above it.
  const bubble = message.content !== '' || message.status === 'streaming'
  return (
    <article
      className={`message ${message.role}`}
      data-testid="chat-message"
      data-role={message.role}
      data-status={message.status}
    >
      {editing && onResend !== undefined ? (
        <EditTurn
          text={message.content}
          onCancel={() => setEditing(false)}
          onResend={async (text) => (await onResend(text)) && setEditing(false)}
        />
      ) : (
        bubble && (
          <div className="bubble">
            <div className="message-text" data-testid="chat-message-text">
              {message.role === 'assistant' ? (
                <Markdown source={message.content} streaming={message.status === 'streaming'} />
              ) : (
                message.content
              )}
            </div>
            {message.status === 'streaming' && <span className="caret" title="answering" />}
          </div>
        )
      )}
      {message.role === 'assistant' && message.status === 'error' && message.error !== undefined && (
        <ErrorNote error={message.error} testId="chat-error" />
      )}
      <div className="message-actions">
        {message.role === 'assistant' && <AnswerPager message={message} onShow={onShow} />}
        {message.role === 'assistant' && message.status === 'done' && message.content !== '' && (
          <CopyButton text={message.content} label="Copy this answer" subtle testId="chat-copy" />
        )}
        {message.role === 'user' && onResend !== undefined && !editing && (
          <button
            type="button"
            className="icon-button subtle"
            onClick={() => setEditing(true)}
            title="Edit and resend"
            data-testid="chat-edit"
          >
            <Pencil size={14} aria-label="Edit and resend" />
          </button>
        )}
        {onDelete !== undefined && !editing && (
          <button
            type="button"
            className="icon-button subtle"
            onClick={onDelete}
            title="Delete this message"
            data-testid="chat-delete-message"
          >
            <Trash2 size={14} aria-label="Delete this message" />
          </button>
        )}
      </div>
      {message.role === 'assistant' && hops.length > 0 && (
        <div className="route" data-testid="chat-route">
          <Route size={14} aria-hidden />
          {message.modelId !== undefined && <span className="mono muted">{message.modelId}</span>}
          {hops.map((hop) => (
            <span key={`${hop.hostId}-${hop.blocks}`} className="hop" data-testid="chat-hop" title={hop.hostId}>
              <span className="mono">{hop.shortId}</span> <span className="mono">{hop.blocks}</span>{' '}
              <span className="muted">{hop.ms}</span>
              {hop.own && (
                <span className="own-host" data-testid="chat-hop-own" title="This computer's own host: free">
                  this computer
                </span>
              )}
              {hop.unaudited && (
                <span
                  className="unaudited"
                  data-testid="chat-hop-unaudited"
                  title={
                    'No other host serves these blocks: its answers are checked only against its own re-runs ' +
                    'and known-answer probes'
                  }
                >
                  unaudited
                </span>
              )}
              {hop.trackerChecked && (
                <span
                  className="tracker-checked"
                  data-testid="chat-hop-tracker-checked"
                  title={
                    'No other host serves these blocks: the tracker runs them itself and re-runs audited sessions ' +
                    'to check its answers'
                  }
                >
                  tracker-checked
                </span>
              )}
              {hop.standby > 0 && (
                <span
                  className="standby"
                  data-testid="chat-hop-standby"
                  title={
                    'Other hosts of these blocks stand by to re-run its steps when the session is audited; this ' +
                    'chat pays them a small standby fee'
                  }
                >
                  {hop.standby === 1 ? '1 twin on standby' : `${hop.standby} twins on standby`}
                </span>
              )}
            </span>
          ))}
          {message.summary !== undefined && (
            <span className="muted stats">{answerStats(message.summary, ownHostId)}</span>
          )}
        </div>
      )}
      {message.role === 'assistant' && hops.some((hop) => hop.unaudited) && (
        <p className="muted small" data-testid="chat-unaudited-note">
          {UNAUDITED_EXPLAINED}
        </p>
      )}
    </article>
  )
}

function EditTurn({ text, onCancel, onResend }: { text: string; onCancel(): void; onResend(text: string): void }) {
  const [draft, setDraft] = useState(text)
  return (
    <div className="edit-turn">
      <textarea
        className="input"
        rows={3}
        value={draft}
        onChange={(event) => setDraft(event.target.value)}
        aria-label="Edit message"
        data-testid="chat-edit-input"
      />
      <div className="composer-actions">
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className="button primary"
          onClick={() => onResend(draft)}
          disabled={draft.trim() === ''}
          data-testid="chat-edit-send"
        >
          Send again
        </button>
      </div>
    </div>
  )
}

/** "‹ 2/3 ›": which of the regenerated answers is shown, and buttons to page through them. */
function AnswerPager({ message, onShow }: { message: ChatEntry; onShow: ((index: number) => void) | undefined }) {
  const { shown, count } = versionPosition(message)
  if (count < 2) return null
  return (
    <span className="answer-pager" data-testid="chat-versions">
      <button
        type="button"
        className="icon-button"
        disabled={onShow === undefined || shown === 1}
        onClick={() => onShow?.(shown - 2)}
        title="Show the answer before"
        data-testid="chat-version-previous"
      >
        <ChevronLeft size={14} aria-label="Show the answer before" />
      </button>
      <span className="small muted" data-testid="chat-version">
        {shown}/{count}
      </span>
      <button
        type="button"
        className="icon-button"
        disabled={onShow === undefined || shown === count}
        onClick={() => onShow?.(shown)}
        title="Show the answer after"
        data-testid="chat-version-next"
      >
        <ChevronRight size={14} aria-label="Show the answer after" />
      </button>
    </span>
  )
}
