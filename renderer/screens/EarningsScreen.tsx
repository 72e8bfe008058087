import { Coins, Hourglass, Wallet } from 'lucide-react'
import { type ReactNode, useEffect } from 'react'
import { Area, AreaChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts'
import { useStore } from 'zustand'
import { ChartFrame, timeDomain, tooltipStyle } from '../components/ChartFrame'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { Stat } from '../components/Stat'
import { formatCredits, formatHour, formatNumber, shortId } from '../format'
import { useStores } from '../stores/context'
import {
  accountCard,
  balanceText,
  byDay,
  byModel,
  creditsChartDescription,
  creditsOverTime,
  localUse,
  receiptEarnedText,
  settlementText,
  type TotalsRow,
} from '../stores/earnings/selectors'
import { layerRange } from '../words'

const dayLabel = (ms: number) =>
  new Date(ms).toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' })

export function EarningsScreen() {
  const { earnings: store } = useStores()
  const { earnings, error } = useStore(store)

  useEffect(() => {
    void store.getState().load()
  }, [store])
  const chart = earnings === null ? [] : creditsOverTime(earnings.byHour)
  const account = accountCard(earnings?.account ?? null)
  const local = earnings === null ? null : localUse(earnings.recent)

  return (
    <div className="screen" data-testid="screen-earnings">
      <ScreenHeader
        title="Earnings"
        subtitle="Credits this computer earned by serving layers of models, settled receipt by receipt."
      />
      <ErrorNote error={error} />
      {earnings === null ? (
        error === null && <Loading text="Loading earnings…" />
      ) : (
        <>
          <div className="stat-grid wide">
            <Panel className="stat-panel">
              <Stat
                label="Settled"
                value={
                  <span data-testid="earnings-balance" data-micro={earnings.balanceMicro}>
                    <Coins size={20} aria-hidden className="accent-icon" /> {balanceText(earnings.balanceMicro)}
                  </span>
                }
                hint={`spendable · host ${shortId(earnings.hostId)}`}
              />
            </Panel>
            <Panel className="stat-panel">
              <Stat
                label="Pending"
                value={
                  <span data-testid="earnings-pending" data-micro={earnings.pendingMicro}>
                    <Hourglass size={20} aria-hidden className="accent-icon" /> {balanceText(earnings.pendingMicro)}
                  </span>
                }
                hint={settlementText(earnings.settlementWindowMs)}
              />
            </Panel>
            <Panel className="stat-panel">
              <Stat
                label="Served"
                value={formatNumber(earnings.servedBlockTokens)}
                hint="layer-tokens in total (tokens × layers)"
              />
            </Panel>
            <Panel className="stat-panel">
              <Stat
                label="Chat account"
                value={
                  <span data-testid="earnings-account" data-micro={account.micro ?? undefined}>
                    <Wallet size={20} aria-hidden className="accent-icon" /> {account.value}
                  </span>
                }
                hint={account.hint}
              />
            </Panel>
          </div>
          {local !== null && (
            <p className="note" data-testid="earnings-local-use">
              <strong>Local use:</strong> {formatNumber(local.receipts)} recent steps of your own chats ran on this
              computer's host ({formatNumber(local.blockTokens)} layer-tokens). Chatting through your own host is free:
              it costs your chat account nothing and earns nothing.
            </p>
          )}
          <Panel title="Credits over time" actions={<span className="muted small">running total, hour by hour</span>}>
            {earnings.byHour.length === 0 ? (
              <p className="muted empty" data-testid="earnings-chart">
                No receipts yet. Host a model and credits appear here hour by hour.
              </p>
            ) : (
              <ChartFrame
                testId="earnings-chart"
                label="Credits earned over time, running total"
                description={creditsChartDescription(chart)}
              >
                <AreaChart data={chart} margin={{ top: 8, right: 12, bottom: 0, left: 0 }}>
                  <CartesianGrid vertical={false} />
                  <XAxis
                    dataKey="start"
                    type="number"
                    scale="time"
                    domain={timeDomain(chart.map((p) => p.start))}
                    tickFormatter={formatHour}
                    minTickGap={40}
                  />
                  <YAxis width={72} tickFormatter={(v: number) => formatCredits(v * 1e6)} />
                  <Tooltip
                    contentStyle={tooltipStyle}
                    labelFormatter={(v) => formatHour(Number(v))}
                    formatter={(v) => [`${formatCredits(Number(v) * 1e6)} credits`]}
                  />
                  <Area type="monotone" dataKey="total" name="total earned" isAnimationActive={false} />
                </AreaChart>
              </ChartFrame>
            )}
          </Panel>
          <div className="two-columns">
            <Panel title="Per model" testId="earnings-by-model">
              <TotalsTable
                rows={byModel(earnings.byDay)}
                first="Model"
                label={(r) => <span className="mono">{r.key}</span>}
              />
            </Panel>
            <Panel title="Per day" testId="earnings-by-day">
              <TotalsTable rows={byDay(earnings.byDay)} first="Day" label={(r) => dayLabel(r.start)} />
            </Panel>
          </div>
          <Panel title="Recent receipts">
            {earnings.recent.length === 0 ? (
              <p className="muted empty">No receipts yet.</p>
            ) : (
              <table className="table">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Model</th>
                    <th>Layers</th>
                    <th>Tokens</th>
                    <th>Session</th>
                    <th className="num">Earned</th>
                  </tr>
                </thead>
                <tbody>
                  {earnings.recent.map((r) => (
                    <tr key={`${r.session}-${r.step}`} data-testid="earnings-receipt" data-local={r.local}>
                      <td>{new Date(r.at).toLocaleTimeString()}</td>
                      <td className="mono">{r.modelId}</td>
                      <td>{layerRange(r.blocks)}</td>
                      <td>{formatNumber(r.tokens)}</td>
                      <td className="mono muted">
                        {shortId(r.session)} #{r.step}
                      </td>
                      <td className={r.local ? 'num muted' : 'num'}>{receiptEarnedText(r)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Panel>
        </>
      )}
    </div>
  )
}

function TotalsTable({
  rows,
  first,
  label,
}: {
  rows: TotalsRow[]
  first: string
  label: (row: TotalsRow) => ReactNode
}) {
  if (rows.length === 0) return <p className="muted empty">Nothing earned yet.</p>
  return (
    <table className="table">
      <thead>
        <tr>
          <th>{first}</th>
          <th className="num">Credits</th>
          <th className="num">Layer-tokens</th>
          <th className="num">Receipts</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.key}>
            <td>{label(row)}</td>
            <td className="num">{formatCredits(row.earnedMicro)}</td>
            <td className="num">{formatNumber(row.blockTokens)}</td>
            <td className="num">{formatNumber(row.receipts)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
