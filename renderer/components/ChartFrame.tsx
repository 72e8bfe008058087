import { type ReactElement, useId } from 'react'
import { ResponsiveContainer } from 'recharts'

/** Recharts styles its tooltip inline, so the theme's tokens go in the same way. */
export const tooltipStyle = {
  background: 'var(--surface)',
  border: '1px solid var(--border)',
  borderRadius: 8,
  color: 'var(--text)',
}

/** Padding either side of a lone point, so a chart of one hour still has an axis to place it on. */
const LONE_POINT_PAD_MS = 3_600_000

/** The time axis's extent over the points' times (ms): recharts then spaces points by time, not by index. */
export function timeDomain(times: readonly number[]): [number, number] {
  if (times.length === 0) return [0, 1]
  const first = Math.min(...times)
  const last = Math.max(...times)
  return first === last ? [first - LONE_POINT_PAD_MS, last + LONE_POINT_PAD_MS] : [first, last]
}

interface ChartFrameProps {
  height?: number
  testId?: string
  /** What the chart is, for screen readers: "Credits earned over time". */
  label: string
  /** What it shows, in words, for those who cannot see it: first and last points, the range. */
  description: string
  children: ReactElement
}

/** A fixed-height figure the chart fills (recharts needs a sized parent), named and described for screen readers. */
export function ChartFrame({ height = 220, testId, label, description, children }: ChartFrameProps) {
  const descriptionId = useId()
  return (
    <figure
      className="chart"
      style={{ height }}
      data-testid={testId}
      aria-label={label}
      aria-describedby={descriptionId}
    >
      <ResponsiveContainer width="100%" height="100%">
        {children}
      </ResponsiveContainer>
      <figcaption id={descriptionId} className="visually-hidden">
        {description}
      </figcaption>
    </figure>
  )
}
