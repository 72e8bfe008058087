import { ShieldBan } from 'lucide-react'
import type { HostChecksView } from '../../../protocol/checks'
import { banNotice, standing } from '../../stores/reputation/selectors'

/** The tracker's ban of this host, above everything else on the screen: its reason, since when, what to do. */
export function BanAlert({ checks }: { checks: HostChecksView | null }) {
  const notice = banNotice(checks)
  if (notice === null) return null
  return (
    <div className="ban-alert" role="alert" data-testid="reputation-ban">
      <ShieldBan size={28} className="ban-icon" aria-hidden />
      <div>
        <div className="ban-title">{notice.title}</div>
        <div className="ban-since">{notice.since}</div>
        <p className="ban-advice">{notice.advice}</p>
      </div>
    </div>
  )
}

/** A badge for where the checks leave this host: banned, on probation (probes to go), passed, or not checked. */
export function StandingBadge({ checks }: { checks: HostChecksView | null }) {
  const s = standing(checks)
  return (
    <span
      className={`standing-badge standing-${s.kind}`}
      title={s.detail}
      data-testid="reputation-standing"
      data-standing={s.kind}
    >
      {s.label}
    </span>
  )
}
