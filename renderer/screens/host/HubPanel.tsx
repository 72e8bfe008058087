import { Download, Lock, Search, X } from 'lucide-react'
import { useEffect } from 'react'
import { useStore } from 'zustand'
import type { HubDownloadView } from '../../../protocol/app'
import { ErrorNote } from '../../components/ErrorNote'
import { Loading } from '../../components/Loading'
import { Panel } from '../../components/Panel'
import { formatBytes, formatNumber } from '../../format'
import { useStores } from '../../stores/context'
import { downloadText, hubFit } from '../../stores/hub/selectors'

/** "From Hugging Face": search GGUF repositories, pick a quantization, download it; a finished one is hosted here. */
export function HubPanel({ onReady }: { onReady(modelId: string): void }) {
  const { hub, computer } = useStores()
  const state = useStore(hub)
  const servable = useStore(computer, (s) => s.view?.servableBytes ?? null)

  useEffect(() => {
    void computer.getState().load()
    return hub.getState().follow(onReady)
  }, [hub, computer, onReady])

  return (
    <Panel title="From Hugging Face">
      <form
        className="inline-field"
        onSubmit={(event) => {
          event.preventDefault()
          void state.search()
        }}
      >
        <input
          className="input"
          aria-label="Search models on Hugging Face"
          placeholder="Search GGUF models, e.g. TinyLlama"
          value={state.query}
          onChange={(event) => state.setQuery(event.target.value)}
          data-testid="hub-query"
        />
        <button type="submit" className="button" disabled={state.searching} data-testid="hub-search">
          <Search size={16} aria-hidden /> {state.searching ? 'Searching…' : 'Search'}
        </button>
      </form>
      <ErrorNote error={state.error} testId="hub-error" />
      <Downloads downloads={state.downloads} onDismiss={(d) => void state.dismiss(d.repo, d.name)} />
      {state.hits !== null && state.repo === null && (
        <ul className="model-list hub-list" data-testid="hub-hits">
          {state.hits.length === 0 && <li className="muted">No GGUF model matches “{state.query}”.</li>}
          {state.hits.map((hit) => (
            <li key={hit.id}>
              <button
                type="button"
                className="model-option"
                onClick={() => void state.openRepo(hit.id)}
                data-testid={`hub-hit-${hit.id}`}
              >
                <div className="model-option-head">
                  <span className="model-name">
                    {hit.id} {hit.gated ? <Lock size={14} aria-label="gated: needs a Hugging Face token" /> : null}
                  </span>
                  <span className="muted small">{formatNumber(hit.downloads ?? 0)} downloads</span>
                </div>
              </button>
            </li>
          ))}
        </ul>
      )}
      {state.repo !== null && (
        <div className="hub-repo" data-testid="hub-repo">
          <div className="model-option-head">
            <span className="model-name mono">{state.repo}</span>
            <button type="button" className="button" onClick={() => void state.search()}>
              Back to results
            </button>
          </div>
          {state.gated && (
            <p className="small warn-text">
              Gated: the app needs HF_TOKEN set to a token that accepted this model’s terms.
            </p>
          )}
          {state.loadingModels && <Loading text="Listing its GGUF files…" />}
          {state.models?.length === 0 && <p className="muted">This repository has no GGUF model.</p>}
          <ul className="model-list hub-list">
            {state.models
              ?.filter((m) => !m.projector)
              .map((m) => {
                const fit = hubFit(m.bytes, servable)
                return (
                  <li key={m.name} className="model-option hub-model" data-testid={`hub-model-${m.name}`}>
                    <div className="model-option-head">
                      <span className="model-name">{m.quant ?? m.name}</span>
                      <span className="muted small">
                        {formatBytes(m.bytes)}
                        {m.files.length > 1 ? ` in ${m.files.length} parts` : ''}
                      </span>
                    </div>
                    <div className="muted small mono">{m.name}</div>
                    <div className={`small ${fit.level === 'none' ? 'warn-text' : 'good-text'}`}>{fit.text}</div>
                    {m.swarmModelId !== null && (
                      <div className="small" data-testid={`hub-on-swarm-${m.name}`}>
                        Already on this swarm as <span className="mono">{m.swarmModelId}</span>: host it without
                        downloading the file.{' '}
                        <button
                          type="button"
                          className="link-button"
                          onClick={() => onReady(m.swarmModelId as string)}
                          data-testid={`hub-host-${m.name}`}
                        >
                          Show its placement
                        </button>
                      </div>
                    )}
                    <button
                      type="button"
                      className="button"
                      onClick={() => void state.download(m.name)}
                      data-testid={`hub-download-${m.name}`}
                    >
                      <Download size={16} aria-hidden /> Download and host
                    </button>
                  </li>
                )
              })}
          </ul>
        </div>
      )}
    </Panel>
  )
}

function Downloads({ downloads, onDismiss }: { downloads: HubDownloadView[]; onDismiss(d: HubDownloadView): void }) {
  if (downloads.length === 0) return null
  return (
    <ul className="model-list hub-downloads" data-testid="hub-downloads">
      {downloads.map((d) => (
        <li key={`${d.repo}/${d.name}`} className="model-option" data-testid="hub-download" data-phase={d.phase}>
          <div className="model-option-head">
            <span className="model-name">{d.quant ?? d.name}</span>
            <button
              type="button"
              className="icon-button"
              onClick={() => onDismiss(d)}
              title={d.phase === 'downloading' ? 'Cancel the download' : 'Remove from the list'}
            >
              <X size={16} aria-label={d.phase === 'downloading' ? 'Cancel the download' : 'Remove from the list'} />
            </button>
          </div>
          <div className="muted small mono">{d.repo}</div>
          {d.phase === 'downloading' && d.totalBytes > 0 && (
            <progress className="hub-progress" value={d.downloadedBytes} max={d.totalBytes} />
          )}
          <div className={`small ${d.phase === 'failed' ? 'warn-text' : ''}`} data-testid="hub-download-text">
            {downloadText(d)}
          </div>
        </li>
      ))}
    </ul>
  )
}
