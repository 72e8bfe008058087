import type { ReactNode } from 'react'

export function Stat({
  label,
  value,
  hint,
  testId,
}: {
  label: string
  value: ReactNode
  hint?: ReactNode
  testId?: string
}) {
  return (
    <div className="stat" data-testid={testId}>
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      {hint !== undefined && <div className="stat-hint">{hint}</div>}
    </div>
  )
}
