import type { Earnings } from '../../../protocol/app'
import { formatCredits, formatHour } from '../../format'

type Point = Earnings['byDay'][number]

export function balanceText(balanceMicro: number): string {
  return `${formatCredits(balanceMicro)} credits`
}

/**
 * The chat-account card. A remote tracker answers the app's key pair's balance (account.balance) once it has an
 * account there: until then the card says so, rather than vanishing as if chat had no account to spend from.
 */
export function accountCard(account: Earnings['account']): { value: string; hint: string; micro: number | null } {
  if (account === null)
    return {
      value: 'not told yet',
      hint: 'this tracker has no account for this app yet (a grant comes with the first answer)',
      micro: null,
    }
  return {
    value: balanceText(account.balanceMicro),
    hint: 'what chat spends; layers your own host serves are free',
    micro: account.balanceMicro,
  }
}

/** When pending earnings settle: "released after 24 h" (a tracker that does not say: "until they settle"). */
export function settlementText(windowMs: number | null): string {
  if (windowMs === null) return 'not spendable until they settle'
  if (windowMs === 0) return 'settled at once'
  const hours = windowMs / 3_600_000
  if (hours >= 1) return `released after ${Number(hours.toFixed(1))} h`
  const minutes = windowMs / 60_000
  if (minutes >= 1) return `released after ${Number(minutes.toFixed(1))} min`
  return `released after ${Number((windowMs / 1000).toFixed(1))} s`
}

export interface ChartPoint {
  start: number
  /** Credits earned in this hour, all models together. */
  credits: number
  /** Credits earned from the first hour shown up to the end of this one. */
  total: number
}

export function creditsOverTime(byHour: Point[]): ChartPoint[] {
  const perHour = new Map<number, number>()
  for (const p of byHour) perHour.set(p.start, (perHour.get(p.start) ?? 0) + p.earnedMicro)
  let total = 0
  return [...perHour.entries()]
    .sort(([a], [b]) => a - b)
    .map(([start, micro]) => {
      total += micro
      return { start, credits: micro / 1e6, total: total / 1e6 }
    })
}

/** The credits chart in words, for screen readers: its hours, the total at the end, the best hour. */
export function creditsChartDescription(points: ChartPoint[]): string {
  const first = points[0]
  const last = points[points.length - 1]
  if (first === undefined || last === undefined) return 'No credits earned yet.'
  const best = points.reduce((a, b) => (b.credits > a.credits ? b : a))
  const micro = (credits: number) => formatCredits(Math.round(credits * 1e6))
  const hours =
    points.length === 1
      ? `In the hour from ${formatHour(first.start)}`
      : `Over ${points.length} hours from ${formatHour(first.start)} to ${formatHour(last.start)}`
  return (
    `${hours}, this computer earned ${micro(last.total)} credits in all; the most in one hour was ` +
    `${micro(best.credits)}, from ${formatHour(best.start)}.`
  )
}

export interface TotalsRow {
  key: string
  start: number
  earnedMicro: number
  blockTokens: number
  receipts: number
}

function totals(points: Point[], keyOf: (p: Point) => string): TotalsRow[] {
  const rows = new Map<string, TotalsRow>()
  for (const p of points) {
    const key = keyOf(p)
    const row = rows.get(key) ?? { key, start: p.start, earnedMicro: 0, blockTokens: 0, receipts: 0 }
    row.earnedMicro += p.earnedMicro
    row.blockTokens += p.blockTokens
    row.receipts += p.receipts
    row.start = Math.min(row.start, p.start)
    rows.set(key, row)
  }
  return [...rows.values()]
}

/** Per model, best earner first. */
export function byModel(byDay: Point[]): TotalsRow[] {
  return totals(byDay, (p) => p.modelId).sort((a, b) => b.earnedMicro - a.earnedMicro)
}

/** Per day, newest first. */
export function byDay(points: Point[]): TotalsRow[] {
  return totals(points, (p) => String(p.start)).sort((a, b) => b.start - a.start)
}

/**
 * This computer's own chats through its own host among the recent receipts: local use, free. Null when none, so the
 * screen says nothing of it.
 */
export function localUse(recent: Earnings['recent']): { receipts: number; blockTokens: number } | null {
  const local = recent.filter((r) => r.local)
  if (local.length === 0) return null
  return {
    receipts: local.length,
    blockTokens: local.reduce((sum, r) => sum + r.tokens * (r.blocks[1] - r.blocks[0]), 0),
  }
}

/** A receipt's Earned cell: what it earned, or that it was local use. */
export function receiptEarnedText(r: Earnings['recent'][number]): string {
  return r.local ? 'local use · free' : formatCredits(r.earnedMicro)
}
