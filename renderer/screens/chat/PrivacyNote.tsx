import { Globe, Lock } from 'lucide-react'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import type { PrivacyNotice } from '../../stores/chat/privacy'

/** Who sees this chat: a lock on the embedded swarm, a globe on a public tracker. */
export function PrivacyNote({ notice }: { notice: PrivacyNotice }) {
  const Icon = notice.level === 'private' ? Lock : Globe
  return (
    <div
      className={`privacy-note ${notice.level}`}
      data-testid="chat-privacy"
      data-level={notice.level}
      title={notice.detail}
    >
      <Icon size={14} aria-hidden />
      <span>{notice.label}</span>
    </div>
  )
}

interface ConsentProps {
  notice: PrivacyNotice
  busy: boolean
  error: ShownError | null
  onAgree(): void
}

/** Asked in place of the composer before the first chat on a public tracker (once per tracker). */
export function PrivacyConsent({ notice, busy, error, onAgree }: ConsentProps) {
  return (
    <div
      className="privacy-consent"
      data-testid="chat-consent"
      role="alertdialog"
      aria-labelledby="privacy-consent-title"
    >
      <h3 id="privacy-consent-title">Before your first chat on this swarm</h3>
      <p>{notice.detail}</p>
      <ErrorNote error={error} testId="chat-consent-error" />
      <button
        type="button"
        className="button primary"
        disabled={busy}
        onClick={onAgree}
        data-testid="chat-consent-accept"
      >
        I understand; chat on this swarm
      </button>
    </div>
  )
}
