import type { ApiAccessView } from '../../../protocol/app'
import { CopyButton } from '../../components/CopyButton'
import { LanSwitch } from '../../components/LanSwitch'
import { Panel } from '../../components/Panel'

interface ApiEndpointPanelProps {
  view: ApiAccessView
  busy: boolean
  onLanOpen(open: boolean): void
}

/** The endpoint to call, and (on the embedded swarm) the switch that serves it to the home network. */
export function ApiEndpointPanel({ view, busy, onLanOpen }: ApiEndpointPanelProps) {
  return (
    <Panel title="Endpoint" testId="api-endpoint-panel">
      <div className="copy-line">
        <code className="path mono" data-testid="api-endpoint">
          {view.endpoint}
        </code>
        <CopyButton text={view.endpoint} label="Copy the endpoint" testId="api-endpoint-copy" />
      </div>
      {view.embedded ? (
        <>
          <LanSwitch
            id="api-lan-open"
            label="Serve the API on my home network"
            checked={view.lanOpen}
            busy={busy}
            onChange={onLanOpen}
          />
          <p className="muted">
            {view.lanOpen
              ? "Other computers at home reach the API at this computer's address above; every request still needs " +
                "the key. This is Settings' home-network switch: the swarm is open to paired apps too."
              : 'The embedded tracker keeps this address across restarts and answers this computer only. The ' +
                'switch (the same as the home-network switch in Settings) serves it to other computers at home; ' +
                'they still need the key.'}
          </p>
        </>
      ) : (
        <p className="muted">
          This is the remote tracker the app is connected to; requests there are served by that swarm's hosts.
        </p>
      )}
    </Panel>
  )
}
