import type { ReactElement } from 'react'
import { ResponsiveContainer } from 'recharts'

/** Recharts styles its tooltip inline, so the theme's tokens go in the same way. */
export const tooltipStyle = { background: 'var(--surface)', border: '1px solid var(--border)', borderRadius: 8, color: 'var(--text)' }

/** A fixed-height box the chart fills; recharts needs a sized parent. */
export function ChartFrame({ height = 220, testId, children }: { height?: number; testId?: string; children: ReactElement }) {
  return (
    <div className="chart" style={{ height }} data-testid={testId}>
      <ResponsiveContainer width="100%" height="100%">
        {children}
      </ResponsiveContainer>
    </div>
  )
}
