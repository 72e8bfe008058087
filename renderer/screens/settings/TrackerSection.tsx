import { useState } from 'react'
import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'
import { EMBEDDED_SWARM } from '../../stores/settings/selectors'

interface TrackerSectionProps {
  settings: Settings
  saving: boolean
  error: ShownError | null
  onSave(text: string): void
}

export function TrackerSection({ settings, saving, error, onSave }: TrackerSectionProps) {
  const [text, setText] = useState(settings.trackerUrl ?? '')
  return (
    <Panel title="Tracker">
      <form
        onSubmit={(event) => {
          event.preventDefault()
          onSave(text)
        }}
      >
        <label htmlFor="settings-tracker-url" className="field-label">
          Tracker URL
        </label>
        <div className="inline-field">
          <input
            id="settings-tracker-url"
            className="input mono"
            value={text}
            placeholder={EMBEDDED_SWARM}
            onChange={(event) => setText(event.target.value)}
            data-testid="settings-tracker-url"
            spellCheck={false}
          />
          <button type="submit" className="button" disabled={saving} data-testid="settings-tracker-save">
            {saving ? 'Checking…' : 'Save'}
          </button>
        </div>
        <p className="muted small">
          Empty: {EMBEDDED_SWARM}. Connected now to <span className="mono">{settings.connectedTrackerUrl}</span>.
        </p>
        <ErrorNote error={error} testId="settings-tracker-error" />
      </form>
    </Panel>
  )
}
