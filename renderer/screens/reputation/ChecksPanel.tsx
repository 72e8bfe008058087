import { TriangleAlert } from 'lucide-react'
import type { HostChecksView } from '../../../protocol/checks'
import { Panel } from '../../components/Panel'
import { Stat } from '../../components/Stat'
import { checkTallies, lastProbe, speedCheck, standing } from '../../stores/reputation/selectors'

/**
 * What the tracker's checks found: probes and audits passed or
 * failed, and the speed it measured against the claimed one.
 */
export function ChecksPanel({ checks }: { checks: HostChecksView | null }) {
  if (checks === null)
    return (
      <Panel title="Checks" testId="reputation-checks">
        <p className="muted empty">{standing(null).detail} Its score counts audits as neutral.</p>
      </Panel>
    )
  const speed = speedCheck(checks)
  return (
    <Panel title="Checks" testId="reputation-checks">
      <p className="muted small">{standing(checks).detail}</p>
      <div className="stat-grid">
        {checkTallies(checks).map((t) => (
          <Stat
            key={t.key}
            label={t.label}
            value={<span className={t.tone === 'neutral' ? undefined : `tone-text-${t.tone}`}>{t.text}</span>}
            hint={t.hint}
            testId={`reputation-${t.key}`}
          />
        ))}
        <Stat label="Last probe" value={lastProbe(checks)} />
      </div>
      <div className="stat-grid">
        <Stat
          label="Measured by the tracker"
          value={speed.measured}
          hint="what routing uses"
          testId="reputation-speed-measured"
        />
        <Stat label="Claimed by this host" value={speed.claimed} testId="reputation-speed-claimed" />
      </div>
      {speed.warning !== null && (
        <div className="warn-note" role="status" data-testid="reputation-speed-warning">
          <TriangleAlert size={16} className="error-icon" aria-hidden />
          <div>{speed.warning}</div>
        </div>
      )}
    </Panel>
  )
}
