import { useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { ConfirmDialog } from '../components/ConfirmDialog'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { ScreenHeader } from '../components/ScreenHeader'
import { exampleModel } from '../stores/api/selectors'
import { useStores } from '../stores/context'
import { ApiEndpointPanel } from './api/ApiEndpointPanel'
import { ApiExamples } from './api/ApiExamples'
import { ApiKeyPanel } from './api/ApiKeyPanel'
import { ApiRequestsPanel } from './api/ApiRequestsPanel'

/** How often the request log is refreshed while the screen is open. */
const REQUESTS_REFRESH_MS = 5_000

/**
 * The swarm's OpenAI-compatible API: its endpoint, the app's
 * key for it, examples to paste, and the requests made with it.
 */
export function ApiScreen() {
  const { api } = useStores()
  const { view, freshKey, busy, confirming, requests, error } = useStore(api)
  const [model, setModel] = useState<string | null>(null)

  useEffect(() => {
    void api.getState().load()
    void api.getState().loadRequests()
    const timer = setInterval(() => void api.getState().loadRequests(), REQUESTS_REFRESH_MS)
    // The full key is shown once: leaving the screen forgets it.
    return () => {
      clearInterval(timer)
      api.getState().cancel()
      api.getState().forgetKey()
    }
  }, [api])

  return (
    <div className="screen" data-testid="screen-api">
      <ScreenHeader
        title="API"
        subtitle="Use the swarm from your own programs: an OpenAI-compatible endpoint, paid from this app's credits."
      />
      <ErrorNote error={error} testId="api-error" />
      {view === null ? (
        error === null && <Loading text="Loading the API…" />
      ) : (
        <>
          <ApiEndpointPanel view={view} busy={busy} onLanOpen={(open) => void api.getState().setLanOpen(open)} />
          <ApiKeyPanel
            view={view}
            freshKey={freshKey}
            busy={busy}
            onCreate={() => void api.getState().createKey()}
            onRevoke={() => api.getState().revokeKey()}
          />
          {confirming !== null && (
            <ConfirmDialog
              title={confirming === 'revoke' ? 'Revoke this key?' : 'Replace this key?'}
              confirmLabel={confirming === 'revoke' ? 'Revoke key' : 'Make a new key'}
              onConfirm={() => void api.getState().confirm()}
              onCancel={() => api.getState().cancel()}
              testId="api-key-dialog"
            >
              {confirming === 'revoke'
                ? 'Programs using this key get "401 invalid_api_key" from their next request on. Cancel keeps it ' +
                  'working.'
                : 'A new key is made and this one revoked: programs using it get "401 invalid_api_key" until they ' +
                  'are given the new one. Cancel keeps it working.'}
            </ConfirmDialog>
          )}
          <ApiExamples view={view} model={model ?? exampleModel(view)} onModel={setModel} apiKey={freshKey} />
          {view.embedded && (
            <ApiRequestsPanel requests={requests} onRefresh={() => void api.getState().loadRequests()} />
          )}
        </>
      )}
    </div>
  )
}
