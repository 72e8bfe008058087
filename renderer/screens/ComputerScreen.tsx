import { Cpu, Gauge, HardDrive, Layers, MemoryStick, Microchip, RefreshCw } from 'lucide-react'
import { useEffect } from 'react'
import { useStore } from 'zustand'
import { ErrorNote } from '../components/ErrorNote'
import { IconTitle } from '../components/IconTitle'
import { Loading } from '../components/Loading'
import { Meter } from '../components/Meter'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { formatBytes, formatGb } from '../format'
import {
  bandwidthLine,
  coresLine,
  diskLine,
  gpuLines,
  memoryLine,
  memoryUsedFraction,
} from '../stores/computer/selectors'
import { useStores } from '../stores/context'

export function ComputerScreen() {
  const { computer } = useStores()
  const { view, loading, error, load } = useStore(computer)

  useEffect(() => {
    if (computer.getState().view === null) void computer.getState().load()
  }, [computer])

  return (
    <div className="screen" data-testid="screen-computer">
      <ScreenHeader
        title="This computer"
        subtitle="What this machine can contribute to the swarm."
        actions={
          <button
            type="button"
            className="button"
            onClick={() => void load(true)}
            disabled={loading}
            data-testid="computer-refresh"
          >
            <RefreshCw size={16} className={loading ? 'spin' : ''} aria-hidden />{' '}
            {loading ? 'Measuring…' : 'Measure again'}
          </button>
        }
      />
      <ErrorNote error={error} />
      {view === null ? (
        error === null && <Loading text="Measuring this computer…" />
      ) : (
        <>
          <Panel className="hero">
            <div className="hero-row">
              <div className="hero-icon">
                <Layers size={28} aria-hidden />
              </div>
              <div>
                <div className="hero-figure" data-testid="computer-servable">
                  Can serve about <strong>{formatGb(view.servableBytes)}</strong> of layers
                </div>
                <p className="hero-text">{view.summary}</p>
              </div>
            </div>
          </Panel>
          <div className="card-grid">
            <Panel title={<IconTitle icon={<Cpu size={16} />} text="Processor" />} testId="computer-cpu">
              <div className="big-line">{view.profile.cpu.model}</div>
              <div className="muted">{coresLine(view)}</div>
              <div className="muted small">
                Runtime uses {view.profile.threads} {view.profile.threads === 1 ? 'thread' : 'threads'}
              </div>
            </Panel>
            <Panel title={<IconTitle icon={<MemoryStick size={16} />} text="Memory" />} testId="computer-memory">
              <div className="big-line">{formatBytes(view.profile.memory.totalBytes)}</div>
              <Meter value={memoryUsedFraction(view)} label="memory in use" />
              <div className="muted small">{memoryLine(view)}</div>
            </Panel>
            <Panel title={<IconTitle icon={<Microchip size={16} />} text="Graphics" />} testId="computer-gpus">
              {gpuLines(view).map((line) => (
                <div key={line} className={view.profile.gpus.length === 0 ? 'muted' : 'big-line'}>
                  {line}
                </div>
              ))}
              <div className="muted small">
                {view.limits.useGpu ? 'GPU use allowed in Settings' : 'GPU use turned off in Settings'}
              </div>
            </Panel>
            <Panel title={<IconTitle icon={<HardDrive size={16} />} text="Disk" />} testId="computer-disk">
              <div className="big-line">{formatBytes(view.profile.disk.freeBytes)} free</div>
              <div className="muted small">{diskLine(view)}</div>
            </Panel>
            <Panel title={<IconTitle icon={<Gauge size={16} />} text="Memory bandwidth" />} testId="computer-bandwidth">
              <div className="big-line">{bandwidthLine(view)}</div>
              <div className="muted small">
                Decoding is memory-bound: this predicts time per block before anything loads.
              </div>
            </Panel>
          </div>
        </>
      )}
    </div>
  )
}
