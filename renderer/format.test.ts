import { describe, expect, it } from 'vitest'
import { formatBlocks, formatBytes, formatCredits, formatDuration, formatPercent } from './format'

describe('display formatting', () => {
  it('shows a first tiny earning instead of rounding it to 0', () => {
    expect(formatCredits(37)).toBe('0.000037')
    expect(formatCredits(1_234_567)).toBe('1.2346')
    expect(formatCredits(123_456_789)).toBe('123.4568')
    expect(formatCredits(0)).toBe('0')
  })

  it('writes sizes, uptimes, ranges and scores the way the screens show them', () => {
    expect(formatBytes(16e9)).toBe('16.0 GB')
    expect(formatBytes(512e6)).toBe('512.0 MB')
    expect(formatDuration(3725)).toBe('1h 02m 05s')
    expect(formatDuration(65)).toBe('1m 05s')
    expect(formatBlocks([4, 12])).toBe('[4, 12)')
    expect(formatPercent(0.873)).toBe('87.3%')
  })
})
