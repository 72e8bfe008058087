import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'

interface LanSectionProps {
  settings: Settings
  saving: boolean
  error: ShownError | null
  onChange(open: boolean): void
}

/** The switch that lets other computers at home find and join the embedded swarm, after pairing. */
export function LanSection({ settings, saving, error, onChange }: LanSectionProps) {
  return (
    <Panel title="Home network">
      <label className="switch-row" htmlFor="settings-lan-open">
        <input
          id="settings-lan-open"
          type="checkbox"
          role="switch"
          aria-checked={settings.lanOpen}
          checked={settings.lanOpen}
          disabled={saving}
          onChange={(event) => onChange(event.target.checked)}
          data-testid="settings-lan-open"
        />
        <span>Open this swarm to my home network</span>
        {saving && <span className="muted small">Restarting the swarm…</span>}
      </label>
      <p className="muted small">
        {settings.lanOpen
          ? 'Other Neuron apps at home see this one under Swarm and may ask to join; only those you pair with, by a code shown on both screens, are let in.'
          : 'Off: the embedded swarm answers this computer only. On, other Neuron apps at home find it and may pair with it; no one else is let in.'}
        {settings.trackerUrl === null ? '' : ' This app is on another tracker now: the switch applies when it is back on its embedded swarm.'}
      </p>
      <ErrorNote error={error} testId="settings-lan-error" />
    </Panel>
  )
}
