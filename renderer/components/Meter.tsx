/** A horizontal bar for a 0..1 value. */
export function Meter({
  value,
  tone = 'accent',
  label,
}: {
  value: number
  tone?: 'accent' | 'good' | 'warn' | 'bad'
  label?: string
}) {
  const clamped = Math.min(1, Math.max(0, value))
  return (
    <div className="meter" title={label === undefined ? undefined : `${label}: ${Math.round(clamped * 100)}%`}>
      <div className={`meter-fill tone-${tone}`} style={{ width: `${clamped * 100}%` }} />
    </div>
  )
}

export function toneFor(value: number): 'good' | 'warn' | 'bad' {
  if (value >= 0.8) return 'good'
  if (value >= 0.5) return 'warn'
  return 'bad'
}
