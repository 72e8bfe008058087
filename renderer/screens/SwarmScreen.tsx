import { useEffect } from 'react'
import { useStore } from 'zustand'
import { CoverageBar } from '../components/CoverageBar'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { formatBytes } from '../format'
import { useStores } from '../stores/context'
import { hostRows, missingBlocks, onlineCount } from '../stores/swarm/selectors'
import { HomeNetworkPanel } from './swarm/HomeNetworkPanel'

export function SwarmScreen() {
  const { swarm } = useStores()
  const { view, error } = useStore(swarm)

  // Polls only while this screen is shown.
  useEffect(() => swarm.getState().poll(3_000), [swarm])

  return (
    <div className="screen" data-testid="screen-swarm">
      <ScreenHeader
        title="Swarm"
        subtitle={
          view === null ? (
            'The hosts and models on your tracker.'
          ) : (
            <>
              Tracker <span className="mono">{view.trackerUrl}</span> · {onlineCount(view)} of {view.hosts.length} hosts
              online
            </>
          )
        }
      />
      <ErrorNote error={error} />
      <HomeNetworkPanel />
      {view === null ? (
        error === null && <Loading text="Asking the tracker…" />
      ) : (
        <>
          <Panel title="Models">
            {view.models.length === 0 ? (
              <p className="muted empty">No models published yet.</p>
            ) : (
              <ul className="coverage-list">
                {view.models.map((model) => {
                  const missing = missingBlocks(model.coverage)
                  return (
                    <li key={model.modelId}>
                      <div className="coverage-head">
                        <span>
                          <strong>{model.name}</strong> <span className="mono muted small">{model.modelId}</span>
                        </span>
                        <span className={`small ${missing > 0 ? 'warn-text' : 'good-text'}`}>
                          {missing > 0
                            ? `${missing} of ${model.nLayer} layers have no host`
                            : `all ${model.nLayer} layers served`}{' '}
                          · {formatBytes(model.bytes)}
                        </span>
                      </div>
                      <CoverageBar
                        cells={model.coverage.map((before) => ({ before }))}
                        testId={`swarm-coverage-${model.modelId}`}
                      />
                    </li>
                  )
                })}
              </ul>
            )}
          </Panel>
          <Panel title="Hosts">
            {view.hosts.length === 0 ? (
              <p className="muted empty">No hosts have joined yet.</p>
            ) : (
              <table className="table">
                <thead>
                  <tr>
                    <th>Host</th>
                    <th>Model</th>
                    <th>Layers</th>
                    <th>Status</th>
                    <th>Sessions</th>
                    <th>Path</th>
                    <th className="num">Per layer</th>
                    <th>CPU</th>
                    <th className="num">RAM</th>
                  </tr>
                </thead>
                <tbody>
                  {hostRows(view).map((row) => (
                    <tr
                      key={row.hostId}
                      data-testid="swarm-host"
                      data-host-id={row.hostId}
                      className={row.online ? '' : 'offline'}
                    >
                      <td className="mono" title={row.hostId}>
                        <span
                          className={`dot ${row.online ? 'online' : 'offline'}`}
                          title={row.online ? 'online' : 'offline'}
                        />{' '}
                        {row.shortId}
                        {row.who !== '' && (
                          <span className="host-who" data-testid="swarm-host-who">
                            {row.who}
                          </span>
                        )}
                      </td>
                      <td className="mono">{row.model}</td>
                      <td className="mono">{row.blocks}</td>
                      <td>
                        <span className={`status-chip status-${row.status}`}>
                          {row.online ? row.status : 'offline'}
                        </span>
                      </td>
                      <td>{row.sessions}</td>
                      <td title={row.pathTitle} data-testid="swarm-host-path">
                        {row.path}
                        {row.seam !== '' && (
                          <span className="host-seam" title={row.seamTitle} data-testid="swarm-host-seam">
                            seam: {row.seam}
                          </span>
                        )}
                      </td>
                      <td className="num">{row.msPerBlock}</td>
                      <td>{row.cpu}</td>
                      <td className="num">{row.ram}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Panel>
        </>
      )}
    </div>
  )
}
