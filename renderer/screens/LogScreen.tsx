import { useEffect, useRef, useState } from 'react'
import { useStore } from 'zustand'
import { CopyButton } from '../components/CopyButton'
import { ErrorNote } from '../components/ErrorNote'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { useStores } from '../stores/context'
import { filterLines, lineTone, logText } from '../stores/log/selectors'

const time = (at: number) => new Date(at).toLocaleTimeString()

/** What the app did (hosting, the swarm, pairing, downloads), as it prints it: to read, filter and copy. */
export function LogScreen() {
  const { log: store } = useStores()
  const { lines, skipped, error, filter } = useStore(store)
  const [follow, setFollow] = useState(true)
  const end = useRef<HTMLDivElement>(null)
  useEffect(() => store.getState().poll(), [store])
  const shown = filterLines(lines, filter)
  const last = shown[shown.length - 1]?.seq
  useEffect(() => {
    if (follow && last !== undefined) end.current?.scrollIntoView({ block: 'nearest' })
  }, [follow, last])

  return (
    <div className="screen" data-testid="screen-log">
      <ScreenHeader
        title="Log"
        subtitle={
          'What the app did: hosting, the swarm, pairing, downloads. Newest at the bottom; ' +
          'copy it into a bug report.'
        }
      />
      <ErrorNote error={error} />
      <Panel
        title={`${shown.length} of ${lines.length} lines`}
        actions={
          <div className="button-row">
            <input
              className="input log-filter"
              type="search"
              placeholder="Filter, e.g. hosting or error"
              value={filter}
              onChange={(event) => store.getState().setFilter(event.target.value)}
              aria-label="Show only lines containing"
              data-testid="log-filter"
            />
            <label className="inline-check">
              <input type="checkbox" checked={follow} onChange={(event) => setFollow(event.target.checked)} /> Follow
            </label>
            <CopyButton text={logText(shown)} label="Copy the lines shown" testId="log-copy" />
          </div>
        }
      >
        {skipped > 0 && (
          <p className="muted small">{skipped} older lines are no longer kept (the app keeps the last 2 000).</p>
        )}
        <div className="log-lines" role="log" aria-live="off" data-testid="log-lines">
          {shown.length === 0 ? (
            <p className="muted empty">{lines.length === 0 ? 'Nothing logged yet.' : 'No line matches.'}</p>
          ) : (
            shown.map((l) => (
              <div key={l.seq} className={`log-line tone-${lineTone(l.text)}`} data-testid="log-line">
                <time className="muted" dateTime={new Date(l.at).toISOString()}>
                  {time(l.at)}
                </time>{' '}
                <span>{l.text}</span>
              </div>
            ))
          )}
          <div ref={end} />
        </div>
      </Panel>
    </div>
  )
}
