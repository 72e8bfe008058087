import { useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { CopyButton } from '../components/CopyButton'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { exampleModel } from '../stores/api/selectors'
import { useStores } from '../stores/context'
import { ApiExamples } from './api/ApiExamples'
import { ApiKeyPanel } from './api/ApiKeyPanel'

/** The swarm's OpenAI-compatible API: its endpoint, the app's key for it, and examples to paste. */
export function ApiScreen() {
  const { api } = useStores()
  const { view, freshKey, busy, error } = useStore(api)
  const [model, setModel] = useState<string | null>(null)

  useEffect(() => {
    void api.getState().load()
    // The full key is shown once: leaving the screen forgets it.
    return () => api.getState().forgetKey()
  }, [api])

  return (
    <div className="screen" data-testid="screen-api">
      <ScreenHeader title="API" subtitle="Use the swarm from your own programs: an OpenAI-compatible endpoint, paid from this app's credits." />
      <ErrorNote error={error} testId="api-error" />
      {view === null ? (
        error === null && <Loading text="Loading the API…" />
      ) : (
        <>
          <Panel title="Endpoint" testId="api-endpoint-panel">
            <div className="copy-line">
              <code className="path mono" data-testid="api-endpoint">
                {view.endpoint}
              </code>
              <CopyButton text={view.endpoint} what="the endpoint" testId="api-endpoint-copy" />
            </div>
            <p className="muted">
              {view.embedded
                ? 'The embedded tracker keeps this address across restarts. It listens on this computer only, unless the home-network switch in Settings is on.'
                : "This is the remote tracker the app is connected to; requests there are served by that swarm's hosts."}
            </p>
          </Panel>
          <ApiKeyPanel
            view={view}
            freshKey={freshKey}
            busy={busy}
            onCreate={() => void api.getState().createKey()}
            onRevoke={() => void api.getState().revokeKey()}
          />
          <ApiExamples view={view} model={model ?? exampleModel(view)} onModel={setModel} apiKey={freshKey} />
        </>
      )}
    </div>
  )
}
