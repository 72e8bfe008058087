import { useEffect } from 'react'
import { useStore } from 'zustand'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'
import { useStores } from '../../stores/context'
import { endedPairings, openPairings, pairingPrompt, peerRows, spacedCode } from '../../stores/lan/selectors'

/** The Neuron apps found on the home network, and the pairings with them: a code to compare on both screens. */
export function HomeNetworkPanel() {
  const { lan } = useStores()
  const { view, error, busy } = useStore(lan)
  useEffect(() => lan.getState().follow(3_000), [lan])
  if (view === null) return null
  const rows = peerRows(view)

  return (
    <Panel title="On your home network">
      <ErrorNote error={error} testId="lan-error" />
      {view.problem !== null && <p className="warn-text small">{view.problem}</p>}
      {openPairings(view).map((p) => (
        <div key={p.pairingId} className="pairing" data-testid="lan-pairing" data-role={p.role}>
          <div className="pairing-code mono" data-testid="lan-pairing-code" data-code={p.code}>
            {spacedCode(p.code ?? '')}
          </div>
          <p>{pairingPrompt(p)}</p>
          {!p.confirmedHere && (
            <div className="button-row">
              <button
                type="button"
                className="button primary"
                disabled={busy === p.pairingId}
                onClick={() => void lan.getState().confirm(p.pairingId)}
                data-testid="lan-pairing-confirm"
              >
                Same code: confirm
              </button>
              <button
                type="button"
                className="button danger"
                disabled={busy === p.pairingId}
                onClick={() => void lan.getState().refuse(p.pairingId)}
                data-testid="lan-pairing-refuse"
              >
                Refuse
              </button>
            </div>
          )}
        </div>
      ))}
      {endedPairings(view).map((p) => (
        <p key={p.pairingId} className="warn-text small" data-testid="lan-pairing-ended" data-state={p.state}>
          {p.message}
        </p>
      ))}
      {rows.length === 0 ? (
        <p className="muted empty">
          No other Neuron app found at home yet. Each computer's Settings has the switch "Open this swarm to my home
          network".
        </p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th>Computer</th>
              <th>Address</th>
              <th>Key</th>
              <th>Pairing</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.key} data-testid="lan-peer" data-key={row.key} data-state={row.state}>
                <td>
                  <strong>{row.name}</strong>
                  {/* Names carry the host id's short form; an older app's may not. */}
                  {!row.name.includes(row.shortId) && <span className="mono muted small"> {row.shortId}</span>}
                </td>
                <td className="mono">{row.address}</td>
                <td className="mono small" title={row.key}>
                  {row.key.slice(0, 12)}…
                </td>
                <td>{row.state}</td>
                <td>
                  {row.canPair && (
                    <button
                      type="button"
                      className="button"
                      disabled={busy === row.key}
                      onClick={() => void lan.getState().pair(row.key)}
                      data-testid="lan-peer-pair"
                    >
                      Ask to join its swarm
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="muted small">
        {view.advertising
          ? 'This app is visible at home; only computers you pair with may join.'
          : 'This app browses only: open it to the home network in Settings to be found.'}
      </p>
    </Panel>
  )
}
