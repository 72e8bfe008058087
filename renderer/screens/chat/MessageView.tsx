import { Route } from 'lucide-react'
import { ErrorNote } from '../../components/ErrorNote'
import type { ChatEntry } from '../../stores/chat/initialState'
import { answerStats, hopViews } from '../../stores/chat/selectors'

export function MessageView({ message }: { message: ChatEntry }) {
  const hops = hopViews(message)
  return (
    <article className={`message ${message.role}`} data-testid="chat-message" data-role={message.role} data-status={message.status}>
      <div className="bubble">
        <span className="message-text" data-testid="chat-message-text">
          {message.content}
        </span>
        {message.status === 'streaming' && <span className="caret" title="answering" />}
      </div>
      {message.role === 'assistant' && message.status === 'error' && message.error !== undefined && <ErrorNote error={message.error} testId="chat-error" />}
      {message.role === 'assistant' && hops.length > 0 && (
        <div className="route" data-testid="chat-route">
          <Route size={14} aria-hidden />
          {message.modelId !== undefined && <span className="mono muted">{message.modelId}</span>}
          {hops.map((hop) => (
            <span key={`${hop.hostId}-${hop.blocks}`} className="hop" data-testid="chat-hop" title={hop.hostId}>
              <span className="mono">{hop.shortId}</span> <span className="mono">{hop.blocks}</span> <span className="muted">{hop.ms}</span>
              {hop.unaudited && (
                <span
                  className="unaudited"
                  data-testid="chat-hop-unaudited"
                  title="No other host serves these blocks: its answers are checked only against its own re-runs and known-answer probes"
                >
                  unaudited
                </span>
              )}
            </span>
          ))}
          {message.summary !== undefined && <span className="muted stats">{answerStats(message.summary)}</span>}
        </div>
      )}
    </article>
  )
}
