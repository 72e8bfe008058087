import { Download, Upload } from 'lucide-react'
import { useState } from 'react'
import type { HostingPhase, Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'

/** Why an import waits, for the phases that are not plainly "hosting". */
const HOSTING_NOW: Partial<Record<HostingPhase, string>> = {
  paused: 'Hosting is paused',
  failed: 'Hosting failed but keeps its range',
  stopping: 'Hosting is stopping',
}

interface IdentitySectionProps {
  settings: Settings
  saving: boolean
  error: ShownError | null
  /** Hosting now (null: not known yet): a key is replaced only while nothing is hosted, paused included. */
  hostingPhase: HostingPhase | null
  onExport(): void
  onImport(pem: string): void
}

export function IdentitySection({ settings, saving, error, hostingPhase, onExport, onImport }: IdentitySectionProps) {
  const [pem, setPem] = useState('')
  const hosting = hostingPhase !== null && hostingPhase !== 'idle'
  return (
    <Panel title="Identity">
      <dl className="facts">
        <dt>Host id</dt>
        <dd className="mono" data-testid="settings-host-id">
          {settings.hostId}
        </dd>
        <dt>Public key</dt>
        <dd className="mono" data-testid="settings-public-key">
          {settings.publicKey}
        </dd>
      </dl>
      <div className="button-row">
        <button type="button" className="button" onClick={onExport} data-testid="settings-identity-export">
          <Download size={16} aria-hidden /> Export private key
        </button>
      </div>
      <p className="muted small">
        The key is your host's identity and earnings account: keep the exported file somewhere safe.
      </p>
      <label htmlFor="settings-identity-import-pem" className="field-label">
        Import a key
      </label>
      <textarea
        id="settings-identity-import-pem"
        className="input mono pem"
        rows={4}
        placeholder={'-----BEGIN PRIVATE KEY-----\n…\n-----END PRIVATE KEY-----'}
        value={pem}
        onChange={(event) => setPem(event.target.value)}
        data-testid="settings-identity-import-pem"
        spellCheck={false}
      />
      <div className="button-row">
        <button
          type="button"
          className="button"
          onClick={() => onImport(pem)}
          disabled={saving || hosting}
          data-testid="settings-identity-import"
        >
          <Upload size={16} aria-hidden /> {saving ? 'Importing…' : 'Import'}
        </button>
        <span className="muted small" data-testid="settings-identity-import-note">
          {hosting
            ? `${HOSTING_NOW[hostingPhase] ?? 'This computer is hosting'}: stop it under Host a model first, since ` +
              'a new key joins the swarm again.'
            : "Replaces this computer's key and host id: export the current key first to keep it and its earnings."}
        </span>
      </div>
      <ErrorNote error={error} testId="settings-identity-error" />
    </Panel>
  )
}
