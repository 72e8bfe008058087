import { useState } from 'react'
import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'

interface AccessSectionProps {
  settings: Settings
  saving: boolean
  error: ShownError | null
  onSave(text: string): void
}

/** The embedded swarm's allow-list: who besides this app may join it. */
export function AccessSection({ settings, saving, error, onSave }: AccessSectionProps) {
  const [text, setText] = useState((settings.allowedKeys ?? []).join('\n'))
  return (
    <Panel title="Who may join">
      <form
        onSubmit={(event) => {
          event.preventDefault()
          onSave(text)
        }}
      >
        <label htmlFor="settings-allowed-keys" className="field-label">
          Allowed public keys
        </label>
        <textarea
          id="settings-allowed-keys"
          className="input mono pem"
          rows={4}
          placeholder={'One public key a line (# starts a comment)'}
          value={text}
          onChange={(event) => setText(event.target.value)}
          data-testid="settings-allowed-keys"
          spellCheck={false}
        />
        <div className="button-row">
          <button type="submit" className="button" disabled={saving} data-testid="settings-allowed-keys-save">
            {saving ? 'Saving…' : 'Save'}
          </button>
        </div>
        <p className="muted small">
          {settings.lanOpen
            ? 'Open to the home network, the embedded swarm admits only this app, the computers paired with it and ' +
              'these keys. '
            : 'Empty: anyone who can reach the embedded swarm may join it. '}
          With keys listed, only they and this app may connect, use its API and dashboards, or fetch its models
          {settings.trackerUrl === null
            ? ''
            : ' (this applies to the embedded swarm; a remote tracker keeps its own list)'}
          .
        </p>
        <ErrorNote error={error} testId="settings-allowed-keys-error" />
      </form>
    </Panel>
  )
}
