import { RefreshCw } from 'lucide-react'
import { useCallback, useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { ConfirmDialog } from '../components/ConfirmDialog'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { useStores } from '../stores/context'
import { hostingBadge, hostingReach, showsPicker } from '../stores/hosting/selectors'
import { AddModelForm } from './host/AddModelForm'
import { HostingProgress } from './host/HostingProgress'
import { HubPanel } from './host/HubPanel'
import { ModelList } from './host/ModelList'
import { PlacementPreview } from './host/PlacementPreview'

export function HostScreen() {
  const { hosting, settings, connection } = useStores()
  const state = useStore(hosting)
  const link = useStore(connection)
  const reach = hostingReach(link.state, link.tracker)
  const canPickFiles = useStore(settings, (s) => s.settings?.canPickFiles ?? false)
  const { status } = state
  const phase = status?.phase ?? 'idle'
  const badge = hostingBadge(phase, reach)
  const [confirmingStop, setConfirmingStop] = useState(false)
  // A model downloaded from the Hub is published by the backend: list it and show where it would be hosted.
  const hubReady = useCallback(
    (modelId: string) => {
      void hosting
        .getState()
        .loadModels()
        .then(() => hosting.getState().selectModel(modelId))
    },
    [hosting],
  )

  useEffect(() => {
    void hosting.getState().loadModels()
    void hosting.getState().loadStatus()
  }, [hosting])

  return (
    <div className="screen" data-testid="screen-host">
      <ScreenHeader
        title="Host a model"
        subtitle="Serve a range of a model's layers for the swarm and earn credits for every token."
        actions={
          <span
            className={`phase-pill phase-${badge.tone}`}
            data-testid="hosting-phase"
            data-phase={phase}
            data-reach={reach}
          >
            {badge.text}
          </span>
        }
      />
      {status?.phase === 'failed' && (
        <ErrorNote
          error={{ code: status.error?.code ?? 'failed', message: status.error?.message ?? 'Hosting failed.' }}
          testId="hosting-error"
        />
      )}
      <ErrorNote error={state.actionError} />
      {showsPicker(status) ? (
        <div className="two-columns">
          <Panel
            title="Models on the tracker"
            actions={
              <button
                type="button"
                className="icon-button"
                onClick={() => void state.loadModels()}
                title="Reload the list"
              >
                <RefreshCw size={16} aria-label="Reload the list" />
              </button>
            }
          >
            <ErrorNote error={state.modelsError} />
            <ModelList
              models={state.models}
              selectedModelId={state.selectedModelId}
              onSelect={(id) => void state.selectModel(id)}
            />
            <AddModelForm
              adding={state.adding}
              error={state.addError}
              onAdd={(path) => void state.addModel(path)}
              onEdit={state.clearAddError}
              onPick={canPickFiles ? () => state.pickModelFile() : null}
            />
          </Panel>
          <Panel title="Placement preview">
            {state.selectedModelId === null && (
              <p className="muted empty">Pick a model to see which layers this computer should serve.</p>
            )}
            {state.previewLoading && <Loading text="Asking the tracker where this computer helps most…" />}
            <ErrorNote error={state.previewError} />
            {state.preview !== null && (
              <PlacementPreview
                preview={state.preview}
                chosen={state.chosenBlocks}
                acting={state.acting}
                reachable={reach === 'ok'}
                onChoose={state.chooseBlocks}
                onConfirm={() => void state.start()}
              />
            )}
          </Panel>
          <HubPanel onReady={hubReady} />
        </div>
      ) : (
        status !== null && (
          <Panel title="Hosting">
            <HostingProgress
              status={status}
              totalLayers={state.models.find((m) => m.modelId === status.modelId)?.nLayer}
              acting={state.acting}
              reach={reach}
              onPause={() => void state.pause()}
              onResume={() => void state.resume()}
              onStop={() => setConfirmingStop(true)}
            />
            {confirmingStop && (
              <ConfirmDialog
                title="Stop hosting?"
                confirmLabel="Stop hosting"
                onConfirm={() => {
                  setConfirmingStop(false)
                  void state.stop()
                }}
                onCancel={() => setConfirmingStop(false)}
                testId="hosting-stop-dialog"
              >
                This computer stops serving its layers and earning credits; chats routed through it move to other hosts.
                The downloaded files stay on disk.
              </ConfirmDialog>
            )}
          </Panel>
        )
      )}
    </div>
  )
}
