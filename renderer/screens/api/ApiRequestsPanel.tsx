import { RefreshCw } from 'lucide-react'
import type { ApiRequestRow } from '../../../protocol/app'
import { Panel } from '../../components/Panel'
import { formatCredits, formatHour } from '../../format'

interface ApiRequestsPanelProps {
  requests: ApiRequestRow[] | null
  onRefresh(): void
}

/** The app account's latest requests through the API: what each asked for, its tokens, and what it cost. */
export function ApiRequestsPanel({ requests, onRefresh }: ApiRequestsPanelProps) {
  return (
    <Panel title="Recent requests" testId="api-requests-panel">
      <div className="button-row">
        <p className="muted">
          The last 100 requests made with this app's key, newest first; refreshed every few seconds while this screen is
          open.
        </p>
        <button type="button" className="button" onClick={onRefresh} data-testid="api-requests-refresh">
          <RefreshCw size={14} aria-hidden /> Refresh
        </button>
      </div>
      {requests !== null && requests.length === 0 && <p data-testid="api-requests-none">No requests yet.</p>}
      {requests !== null && requests.length > 0 && (
        <table className="table" data-testid="api-requests">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Model</th>
              <th scope="col">Prompt tokens</th>
              <th scope="col">Completion tokens</th>
              <th scope="col">Credits</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {requests.map((r) => (
              <tr key={`${r.startedAt}-${r.endpoint}-${r.modelId}-${r.promptTokens}`} data-testid="api-request-row">
                <td>{formatHour(r.startedAt)}</td>
                <td className="mono">/{r.endpoint.replace('.', '/')}</td>
                <td className="mono">{r.modelId}</td>
                <td className="num" data-testid="api-request-prompt">
                  {r.promptTokens}
                </td>
                <td className="num" data-testid="api-request-completion">
                  {r.completionTokens}
                </td>
                <td className="num" data-testid="api-request-credits">
                  {formatCredits(r.chargedMicro)}
                </td>
                <td>{r.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  )
}
