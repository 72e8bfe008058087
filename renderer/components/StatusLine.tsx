import { useStore } from 'zustand'
import { type StatusPartState, statusParts } from '../stores/connection/selectors'
import { useStores } from '../stores/context'
import { trackerShort } from '../stores/settings/selectors'

// Not "connecting": the connecting screen's class of that name would size the dot like a page.
const DOT: Record<StatusPartState, string> = { ok: 'online', waiting: 'waiting', down: 'down', off: 'offline' }

/** What is connected and what is not: the app's backend, its tracker, and hosting, each with its own dot. */
export function StatusLine() {
  const { connection, settings, hosting } = useStores()
  const { state, tracker } = useStore(connection)
  const current = useStore(settings, (s) => s.settings)
  const hostingStatus = useStore(hosting, (s) => s.status)
  const parts = statusParts(state, tracker, hostingStatus)
  return (
    <div className="status-line" data-testid="status-line" data-connection={state}>
      {parts.map((part) => (
        <div
          key={part.id}
          className="status-part"
          data-testid={`status-${part.id}`}
          data-state={part.state}
          title={part.detail ?? undefined}
        >
          <span className={`dot ${DOT[part.state]}`} aria-hidden />
          <span>{part.text}</span>
        </div>
      ))}
      {current !== null && (
        <span className="status-tracker" title={current.connectedTrackerUrl} data-testid="status-tracker-address">
          {trackerShort(current)}
        </span>
      )}
    </div>
  )
}
