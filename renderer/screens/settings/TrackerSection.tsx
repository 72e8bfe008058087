import { useState } from 'react'
import type { HostingStatus, Settings, SettingsUpdate } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'
import { EMBEDDED_SWARM, hostingLeftBySwitch } from '../../stores/settings/selectors'

type HostingOnSwitch = NonNullable<SettingsUpdate['hostingOnSwitch']>

interface TrackerSectionProps {
  settings: Settings
  saving: boolean
  error: ShownError | null
  /** This computer's hosting now: a switch of tracker asks what to do with it. */
  hosting: HostingStatus | null
  onSave(text: string, hostingOnSwitch?: HostingOnSwitch): void
  /** Whether the app could switch to the typed tracker (else its error shows): asked before hosting is asked about. */
  onCheck(text: string): Promise<boolean>
}

export function TrackerSection({ settings, saving, error, hosting, onSave, onCheck }: TrackerSectionProps) {
  const [text, setText] = useState(settings.trackerUrl ?? '')
  /** The hosting the switch would leave, while the user is asked what to do with it. */
  const [asking, setAsking] = useState<string | null>(null)
  const answer = (how: HostingOnSwitch) => {
    setAsking(null)
    onSave(text, how)
  }
  return (
    <Panel title="Tracker">
      <form
        onSubmit={async (event) => {
          event.preventDefault()
          const left = hostingLeftBySwitch(settings, text, hosting)
          if (left === null) onSave(text)
          // A URL that is wrong, or where no tracker answers, is refused before hosting is asked about.
          else if (await onCheck(text)) setAsking(left)
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
            onChange={(event) => {
              setText(event.target.value)
              setAsking(null)
            }}
            data-testid="settings-tracker-url"
            spellCheck={false}
          />
          <button
            type="submit"
            className="button"
            disabled={saving || asking !== null}
            data-testid="settings-tracker-save"
          >
            {saving ? 'Checking…' : 'Save'}
          </button>
        </div>
        {asking !== null && (
          <div
            className="confirm"
            role="alertdialog"
            aria-label="Hosting on this tracker"
            data-testid="settings-switch-hosting"
          >
            <p>
              This computer hosts <span className="mono">{asking}</span> on the tracker in force; it stops there when
              the app switches. What then?
            </p>
            <div className="inline-field">
              <button
                type="button"
                className="button primary"
                onClick={() => answer('resumeOnReturn')}
                data-testid="settings-switch-resume"
              >
                Stop, and host it again when I switch back
              </button>
              <button
                type="button"
                className="button"
                onClick={() => answer('stop')}
                data-testid="settings-switch-stop"
              >
                Stop hosting it
              </button>
              <button
                type="button"
                className="button"
                onClick={() => setAsking(null)}
                data-testid="settings-switch-cancel"
              >
                Cancel
              </button>
            </div>
          </div>
        )}
        <p className="muted small">
          Empty: {EMBEDDED_SWARM}. Connected now to <span className="mono">{settings.connectedTrackerUrl}</span>.
        </p>
        <ErrorNote error={error} testId="settings-tracker-error" />
      </form>
    </Panel>
  )
}
