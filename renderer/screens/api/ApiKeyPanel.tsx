import { KeyRound } from 'lucide-react'
import type { ApiAccessView } from '../../../protocol/app'
import { CopyButton } from '../../components/CopyButton'
import { Panel } from '../../components/Panel'
import { formatHour } from '../../format'

interface ApiKeyPanelProps {
  view: ApiAccessView
  freshKey: string | null
  busy: boolean
  onCreate(): void
  onRevoke(): void
}

/**
 * The app's key on the embedded tracker: made on request, shown once
 * in full, then masked; or, on a remote tracker, who hands keys out.
 */
export function ApiKeyPanel({ view, freshKey, busy, onCreate, onRevoke }: ApiKeyPanelProps) {
  if (!view.embedded) {
    return (
      <Panel title="API key" testId="api-key-panel">
        <p data-testid="api-key-remote">
          Keys for this tracker come from its operator (<span className="mono">neuron account create</span> on the
          tracker's database). Ask them for one, then use it with the endpoint above.
        </p>
      </Panel>
    )
  }
  const { key } = view
  return (
    <Panel title="API key" testId="api-key-panel">
      <p className="muted">
        Requests with this key pay from this app's own account, the one chat spends from. Making a new key revokes the
        one before. Importing another identity (Settings) revokes it too: the new identity starts with no key.
      </p>
      {freshKey !== null && (
        <div className="fresh-key" data-testid="api-key-fresh">
          <div className="copy-line">
            <KeyRound size={16} aria-hidden />
            <code className="path mono" data-testid="api-key-full">
              {freshKey}
            </code>
            <CopyButton text={freshKey} label="Copy the API key" testId="api-key-copy" />
          </div>
          <p className="muted">
            Copy it now: it is shown this once. Later the app shows only its first and last characters.
          </p>
        </div>
      )}
      {freshKey === null && key !== null && (
        <p data-testid="api-key-masked">
          <span className="mono">{key.masked}</span> <span className="muted">made {formatHour(key.createdAt)}</span>
        </p>
      )}
      {key === null && <p data-testid="api-key-none">No key: make one to call this endpoint from your own programs.</p>}
      <div className="button-row">
        <button
          type="button"
          className="button primary"
          disabled={busy}
          onClick={onCreate}
          data-testid="api-key-create"
        >
          {key === null ? 'Make a key' : 'Make a new key'}
        </button>
        {key !== null && (
          <button
            type="button"
            className="button danger"
            disabled={busy}
            onClick={onRevoke}
            data-testid="api-key-revoke"
          >
            Revoke key
          </button>
        )}
      </div>
    </Panel>
  )
}
