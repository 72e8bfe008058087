import { Check, CircleAlert, Copy } from 'lucide-react'
import { useState } from 'react'

interface CopyButtonProps {
  text: string
  /** What the button does, as its title: "Copy this answer", "Copy the endpoint". */
  label: string
  testId?: string
  /** Quieter, beside text it belongs to (an answer, a code block). */
  subtle?: boolean
}

/** Copies `text` to the clipboard; says so, or says the browser refused (then the text is there to select). */
export function CopyButton({ text, label, testId, subtle = false }: CopyButtonProps) {
  const [copied, setCopied] = useState<boolean | null>(null)
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setCopied(true),
      () => setCopied(false),
    )
  const refused = 'The browser refused to copy; select the text instead'
  return (
    <button
      type="button"
      className={subtle ? 'icon-button subtle' : 'icon-button'}
      onClick={() => void copy()}
      title={copied === false ? refused : label}
      data-testid={testId}
      data-copied={copied ?? undefined}
    >
      {copied === true && <Check size={14} aria-label="Copied" />}
      {copied === false && <CircleAlert size={14} aria-label={refused} />}
      {copied === null && <Copy size={14} aria-label={label} />}
    </button>
  )
}
