import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { LanSwitch } from '../../components/LanSwitch'
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
      <LanSwitch
        id="settings-lan-open"
        label="Open this swarm to my home network"
        checked={settings.lanOpen}
        busy={saving}
        onChange={onChange}
      />
      <p className="muted small">
        {settings.lanOpen
          ? 'Other Neuron apps at home see this one under Swarm and may ask to join; only those you pair with, by ' +
            'a code shown on both screens, are let in.'
          : 'Off: the embedded swarm answers this computer only. On, other Neuron apps at home find it and may ' +
            'pair with it; no one else is let in.'}
        {settings.trackerUrl === null
          ? ''
          : ' This app is on another tracker now: the switch applies when it is back on its embedded swarm.'}
      </p>
      <ErrorNote error={error} testId="settings-lan-error" />
    </Panel>
  )
}
