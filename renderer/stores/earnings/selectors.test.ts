import { describe, expect, it } from 'vitest'
import { someEarnings } from '../../../test/renderer/earnings-fixtures'
import { formatHour } from '../../format'
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
} from './selectors'

describe('earnings selectors', () => {
  it('shows a small balance to 6 significant decimals', () => {
    expect(balanceText(someEarnings.balanceMicro)).toBe('0.00425 credits')
  })

  it('says when pending earnings are released, in the unit that reads best', () => {
    expect(settlementText(someEarnings.settlementWindowMs)).toBe('released after 24 h')
    expect(settlementText(90 * 60_000)).toBe('released after 1.5 h')
    expect(settlementText(10 * 60_000)).toBe('released after 10 min')
    expect(settlementText(30_000)).toBe('released after 30 s')
    expect(settlementText(0)).toBe('settled at once')
    expect(settlementText(null)).toBe('not spendable until they settle')
  })

  it('charts credits per hour across models, oldest first, with a running total', () => {
    expect(creditsOverTime(someEarnings.byHour)).toEqual([
      { start: 3_600_000, credits: 0.002, total: 0.002 },
      { start: 7_200_000, credits: 0.00225, total: 0.00425 },
    ])
  })

  it('totals per model (best first) and per day (newest first)', () => {
    expect(byModel(someEarnings.byDay).map((r) => [r.key, r.earnedMicro])).toEqual([
      ['stories260k', 3_000],
      ['llama-70b', 1_250],
    ])
    expect(byDay(someEarnings.byDay).map((r) => r.start)).toEqual([86_400_000, 0])
  })

  it('describes the credits chart in words for screen readers', () => {
    const points = creditsOverTime(someEarnings.byHour)
    expect(creditsChartDescription(points)).toBe(
      `Over 2 hours from ${formatHour(3_600_000)} to ${formatHour(7_200_000)}, this computer earned 0.00425 ` +
        `credits in all; the most in one hour was 0.00225, from ${formatHour(7_200_000)}.`,
    )
    expect(creditsChartDescription([])).toBe('No credits earned yet.')
  })

  it('keeps the chat-account card on a tracker that has not told the balance yet, saying when it will', () => {
    expect(accountCard(null)).toEqual({
      value: 'not told yet',
      hint: 'this tracker has no account for this app yet (a grant comes with the first answer)',
      micro: null,
    })
    expect(accountCard({ accountId: null, balanceMicro: 4250 })).toEqual({
      value: '0.00425 credits',
      hint: 'what chat spends; layers your own host serves are free',
      micro: 4250,
    })
  })
})

describe('local use', () => {
  const receipt = (local: boolean, blocks: [number, number], tokens: number, earnedMicro: number) => ({
    at: 0,
    session: 'a'.repeat(32),
    step: 1,
    modelId: 'stories260k',
    blocks,
    tokens,
    earnedMicro,
    local,
  })

  it('counts the own chats through this host, and shows them as free rather than as 0 credits earned', () => {
    const recent = [receipt(true, [0, 5], 10, 0), receipt(false, [2, 5], 4, 120), receipt(true, [0, 5], 1, 0)]
    expect(localUse(recent)).toEqual({ receipts: 2, blockTokens: 55 })
    expect(receiptEarnedText(recent[0] as (typeof recent)[number])).toBe('local use · free')
    expect(receiptEarnedText(recent[1] as (typeof recent)[number])).not.toContain('local')
    expect(localUse([receipt(false, [0, 5], 3, 10)])).toBeNull()
  })
})
