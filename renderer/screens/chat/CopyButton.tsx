import { Check, CircleAlert, Copy } from 'lucide-react'
import { useState } from 'react'

interface CopyButtonProps {
  text: string
  /** What is copied, as the button's title: "Copy this answer", "Copy this code". */
  label: string
  testId: string
}

/** Copies `text` to the clipboard and shows whether the browser let it. */
export function CopyButton({ text, label, testId }: CopyButtonProps) {
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
      className="icon-button subtle"
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
