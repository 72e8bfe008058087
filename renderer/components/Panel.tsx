import type { ReactNode } from 'react'

interface PanelProps {
  title?: ReactNode
  actions?: ReactNode
  className?: string
  testId?: string
  children: ReactNode
}

export function Panel({ title, actions, className, testId, children }: PanelProps) {
  return (
    <section className={`panel ${className ?? ''}`} data-testid={testId}>
      {(title !== undefined || actions !== undefined) && (
        <header className="panel-header">
          <h2>{title}</h2>
          {actions}
        </header>
      )}
      {children}
    </section>
  )
}
