import { useStore } from 'zustand'
import { connectionText } from '../stores/connection/selectors'
import { useStores } from '../stores/context'
import { trackerShort } from '../stores/settings/selectors'

/** Whether the backend is reachable, and which tracker it talks to. */
export function StatusLine() {
  const { connection, settings } = useStores()
  const { state } = useStore(connection)
  const current = useStore(settings, (s) => s.settings)
  return (
    <div className="status-line" data-testid="status-line" data-connection={state}>
      <span className={`dot ${state === 'open' ? 'online' : 'connecting'}`} aria-hidden />
      <span>{connectionText(state)}</span>
      {current !== null && (
        <span className="status-tracker" title={current.connectedTrackerUrl}>
          {trackerShort(current)}
        </span>
      )}
    </div>
  )
}
