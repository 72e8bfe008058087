import { CircleAlert } from 'lucide-react'
import type { ShownError } from '../api/errorText'

/** An error shown where it happened, with the backend's own words underneath when the sentence is ours. */
export function ErrorNote({ error, testId }: { error: ShownError | null; testId?: string }) {
  if (error === null) return null
  return (
    <div className="error-note" role="alert" data-testid={testId} data-code={error.code}>
      <CircleAlert size={16} className="error-icon" aria-hidden />
      <div>
        <div>{error.message}</div>
        {error.detail !== undefined && error.detail !== error.message && (
          <div className="error-detail">{error.detail}</div>
        )}
      </div>
    </div>
  )
}
