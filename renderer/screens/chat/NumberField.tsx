import { useEffect, useRef, useState } from 'react'
import { FIELD_LABELS, type NumberField as Field, parseField } from '../../stores/chat/fields'

interface NumberFieldProps {
  field: Field
  /** The value in force; null for an empty seed (random). */
  value: number | null
  onValue(value: number | null): void
  /** Why the text is not a valid value, or null once it is (sending waits for it). */
  onInvalid(message: string | null): void
  placeholder?: string
  className?: string
  /** A tighter max than the field's own (max tokens: the model's context); the text is checked again on a change. */
  limit?: number
}

/**
 * A number the user types freely: it may be emptied while typing. A valid value is taken at once; an
 * invalid one says why under the field and is not taken. Remount it (key) to show another value.
 */
export function NumberField({ field, value, onValue, onInvalid, placeholder, className, limit }: NumberFieldProps) {
  const [text, setText] = useState(value === null ? '' : String(value))
  const [problem, setProblem] = useState<string | null>(null)
  const id = `chat-field-${field}`
  const take = (typed: string) => {
    const parsed = parseField(field, typed, limit)
    setProblem(parsed.ok ? null : parsed.message)
    onInvalid(parsed.ok ? null : parsed.message)
    if (parsed.ok) onValue(parsed.value)
  }
  // A new bound (another model's context) may make the text valid or not: checked again, once per bound.
  const checked = useRef(limit)
  // biome-ignore lint/correctness/useExhaustiveDependencies: only a change of bound re-checks the text
  useEffect(() => {
    if (checked.current === limit) return
    checked.current = limit
    take(text)
  }, [limit])
  return (
    <label className={`number-field ${className ?? ''}`} htmlFor={id}>
      <span className="field-label">{FIELD_LABELS[field]}</span>
      <input
        id={id}
        className="input"
        inputMode="decimal"
        value={text}
        placeholder={placeholder}
        aria-invalid={problem !== null}
        aria-describedby={problem === null ? undefined : `${id}-error`}
        max={limit}
        onChange={(event) => {
          setText(event.target.value)
          take(event.target.value)
        }}
        data-testid={`chat-${field === 'maxTokens' ? 'max-tokens' : `setting-${field}`}`}
      />
      {problem !== null && (
        <span className="field-error" id={`${id}-error`} role="alert" data-testid={`chat-field-error-${field}`}>
          {problem}
        </span>
      )}
    </label>
  )
}
