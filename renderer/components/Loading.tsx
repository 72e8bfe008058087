import { LoaderCircle } from 'lucide-react'

export function Loading({ text }: { text: string }) {
  return (
    <div className="loading">
      <LoaderCircle className="spin" size={18} aria-hidden />
      <span>{text}</span>
    </div>
  )
}
