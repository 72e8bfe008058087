import { Pause, Play, Square } from 'lucide-react'
import type { HostingStatus } from '../../../protocol/app'
import { Loading } from '../../components/Loading'
import { Meter } from '../../components/Meter'
import { Stat } from '../../components/Stat'
import { useNow } from '../../components/useNow'
import { formatNumber, formatTokensPerSecond } from '../../format'
import {
  artifactRow,
  canPause,
  canResume,
  canStop,
  type HostingReach,
  reachNote,
  uptimeText,
} from '../../stores/hosting/selectors'
import { layerRange } from '../../words'

interface HostingProgressProps {
  status: HostingStatus
  /** The model's layers, to say "layers 3–5 of 5"; unknown until the model list has loaded. */
  totalLayers: number | undefined
  acting: boolean
  /** What is out of reach now: the buttons that cannot work are off. */
  reach: HostingReach
  onPause(): void
  onResume(): void
  onStop(): void
}

export function HostingProgress({
  status,
  totalLayers,
  acting,
  reach,
  onPause,
  onResume,
  onStop,
}: HostingProgressProps) {
  const note = reachNote(reach)
  return (
    <div className="hosting-progress">
      <div className="hosting-target" data-testid="hosting-target">
        <span className="mono">{status.modelId ?? '—'}</span>
        {status.blocks !== null && <span className="muted"> · {layerRange(status.blocks, totalLayers)}</span>}
      </div>
      {status.artifacts.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th>Artifact</th>
              <th className="wide">Progress</th>
              <th>Speed</th>
              <th>Peers</th>
              <th>Time left</th>
            </tr>
          </thead>
          <tbody>
            {status.artifacts.map((artifact) => {
              const row = artifactRow(artifact)
              return (
                <tr key={row.file} data-testid="artifact-row" data-file={row.file}>
                  <td className="mono">{row.file}</td>
                  <td>
                    <Meter
                      value={row.fraction}
                      tone={row.fraction >= 1 ? 'good' : 'accent'}
                      label={`${row.file} downloaded`}
                    />
                    <span className="small muted">{row.bytes}</span>
                  </td>
                  <td>{row.speed}</td>
                  <td>{row.peers}</td>
                  <td>{row.eta}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
      {status.phase === 'loading' && <Loading text="Loading the layers into memory and measuring their speed…" />}
      {status.serving !== null && <ServingPanel serving={status.serving} />}
      <div className="button-row">
        <button
          type="button"
          className="button"
          onClick={onPause}
          disabled={acting || !canPause(status, reach)}
          data-testid="hosting-pause"
        >
          <Pause size={16} aria-hidden /> Pause
        </button>
        <button
          type="button"
          className="button"
          onClick={onResume}
          disabled={acting || !canResume(status, reach)}
          data-testid="hosting-resume"
        >
          <Play size={16} aria-hidden /> Resume
        </button>
        <button
          type="button"
          className="button danger"
          onClick={onStop}
          disabled={acting || !canStop(status, reach)}
          data-testid="hosting-stop"
        >
          <Square size={16} aria-hidden /> Stop
        </button>
      </div>
      {note !== null && (
        <p className="muted small" data-testid="hosting-reach-note">
          {note}
        </p>
      )}
    </div>
  )
}

function ServingPanel({ serving }: { serving: NonNullable<HostingStatus['serving']> }) {
  const now = useNow()
  return (
    <div className="serving-panel" data-testid="serving-panel">
      <div className="stat-grid">
        <Stat
          label="Sessions"
          value={`${serving.activeSessions} / ${serving.maxSessions}`}
          hint="active / most at once"
        />
        <Stat
          label="Speed"
          value={formatTokensPerSecond(serving.tokensPerSecond)}
          hint="decode speed of these layers"
        />
        <Stat label="Served" value={formatNumber(serving.servedBlockTokens)} hint="layer-tokens since start" />
        <Stat label="Uptime" value={uptimeText(serving.startedAt, now)} />
      </div>
      <div className="muted small">
        Endpoint: <span className="mono">{serving.endpoint ?? 'reached through the tracker relay'}</span>
      </div>
    </div>
  )
}
