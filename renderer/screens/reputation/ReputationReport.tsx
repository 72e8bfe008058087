import { ShieldCheck } from 'lucide-react'
import { CartesianGrid, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts'
import type { ReputationView } from '../../../protocol/app'
import { ChartFrame, timeDomain, tooltipStyle } from '../../components/ChartFrame'
import { Meter, toneFor } from '../../components/Meter'
import { Panel } from '../../components/Panel'
import { Stat } from '../../components/Stat'
import { formatHour, formatNumber, formatPercent, shortId } from '../../format'
import {
  componentBars,
  historyDescription,
  historySeries,
  scoreHeadline,
  successRate,
} from '../../stores/reputation/selectors'
import { ChecksPanel } from './ChecksPanel'
import { BanAlert, StandingBadge } from './Standing'

/** Everything the Reputation screen shows of a loaded view: a ban first, then the score, the checks and the history. */
export function ReputationReport({ view }: { view: ReputationView }) {
  const headline = scoreHeadline(view)
  const history = historySeries(view)
  return (
    <>
      <BanAlert checks={view.checks} />
      <div className="two-columns">
        <Panel className="score-panel">
          <div className="score" data-testid="reputation-score" data-score={view.score}>
            <ShieldCheck
              size={36}
              className={headline.recorded ? `tone-text-${toneFor(view.score)}` : 'muted'}
              aria-hidden
            />
            <div>
              <div className="score-value">{headline.value}</div>
              <div className="muted">
                {headline.grade} · host <span className="mono">{shortId(view.hostId)}</span>
              </div>
            </div>
            <StandingBadge checks={view.checks} />
          </div>
          <div className="stat-grid">
            <Stat
              label="Completed steps"
              value={formatNumber(view.completedSteps)}
              hint="for others: your own chats through it are paid, not counted"
            />
            <Stat label="Failed steps" value={formatNumber(view.failedSteps)} hint={successRate(view)} />
          </div>
        </Panel>
        <Panel title="Components">
          <ul className="component-bars">
            {componentBars(view).map((bar) => (
              <li key={bar.key} data-testid={`reputation-component-${bar.key}`} data-value={bar.value}>
                <div className="component-head">
                  <span>{bar.label}</span>
                  <span className="mono">{formatPercent(bar.value)}</span>
                </div>
                <Meter value={bar.value} tone={toneFor(bar.value)} label={bar.label} />
                <div className="small muted">{bar.hint}</div>
              </li>
            ))}
          </ul>
        </Panel>
      </div>
      <ChecksPanel checks={view.checks} />
      <Panel title="History">
        {view.history.length === 0 ? (
          <p className="muted empty" data-testid="reputation-history">
            No history yet: the tracker scores a host as it serves.
          </p>
        ) : (
          <ChartFrame
            testId="reputation-history"
            label="Reputation score over time"
            description={historyDescription(view)}
          >
            <LineChart data={history} margin={{ top: 8, right: 12, bottom: 0, left: 0 }}>
              <CartesianGrid vertical={false} />
              <XAxis
                dataKey="at"
                type="number"
                scale="time"
                domain={timeDomain(history.map((p) => p.at))}
                tickFormatter={formatHour}
                minTickGap={40}
              />
              <YAxis width={48} domain={[0, 100]} tickFormatter={(v: number) => `${v}%`} />
              <Tooltip
                contentStyle={tooltipStyle}
                labelFormatter={(v) => formatHour(Number(v))}
                formatter={(v) => [`${v}%`, 'score']}
              />
              <Line type="monotone" dataKey="score" dot={false} isAnimationActive={false} />
            </LineChart>
          </ChartFrame>
        )}
      </Panel>
    </>
  )
}
