import type { ReactNode } from 'react'

export function IconTitle({ icon, text }: { icon: ReactNode; text: string }) {
  return (
    <span className="icon-title">
      {icon}
      {text}
    </span>
  )
}
