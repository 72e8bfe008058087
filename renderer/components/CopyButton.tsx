import { Check, CircleAlert, Copy } from 'lucide-react'
import { useState } from 'react'

/** Copies `text` to the clipboard; says so, or says the browser refused (then the text is there to select). */
export function CopyButton({ text, what, testId }: { text: string; what: string; testId?: string }) {
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
      className="icon-button"
      onClick={() => void copy()}
      title={copied === false ? refused : `Copy ${what}`}
      data-testid={testId}
      data-copied={copied ?? undefined}
    >
      {copied === true && <Check size={14} aria-label="Copied" />}
      {copied === false && <CircleAlert size={14} aria-label={refused} />}
      {copied === null && <Copy size={14} aria-label={`Copy ${what}`} />}
    </button>
  )
}
