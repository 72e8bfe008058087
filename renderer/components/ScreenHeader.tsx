import type { ReactNode } from 'react'

export function ScreenHeader({
  title,
  subtitle,
  actions,
}: {
  title: string
  subtitle?: ReactNode
  actions?: ReactNode
}) {
  return (
    <header className="screen-header">
      <div>
        <h1>{title}</h1>
        {subtitle !== undefined && <p className="muted">{subtitle}</p>}
      </div>
      {actions !== undefined && <div className="screen-actions">{actions}</div>}
    </header>
  )
}
