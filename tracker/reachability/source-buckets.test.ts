// The STUN server's rate bound on a clock the test turns: per source, in all, and in a table that stays bounded.
import { describe, expect, it } from 'vitest'
import { SourceBuckets } from './source-buckets'

/** How many of `n` takes by `source` at `nowMs` succeed. */
const takes = (buckets: SourceBuckets, source: string, n: number, nowMs: number) =>
  Array.from({ length: n }, () => buckets.take(source, nowMs)).filter(Boolean).length

describe('SourceBuckets', () => {
  it('gives one source its burst at once, then its rate, and other sources their own', () => {
    const buckets = new SourceBuckets({ perSecond: 20 }, 0)
    expect(takes(buckets, '203.0.113.7', 100, 0)).toBe(20)
    expect(takes(buckets, '198.51.100.1', 100, 0)).toBe(20)
    expect(takes(buckets, '203.0.113.7', 100, 500)).toBe(10)
    expect(takes(buckets, '203.0.113.7', 100, 60_000)).toBe(20) // a long quiet spell refills a burst, no more
    expect(takes(buckets, '203.0.113.7', 5, 30_000)).toBe(0) // a clock that steps back adds nothing
  })

  it('bounds the answers to all sources together', () => {
    const buckets = new SourceBuckets({ perSecond: 20, totalPerSecond: 50 }, 0)
    const sources = Array.from({ length: 10 }, (_, i) => `192.0.2.${i}`)
    expect(sources.reduce((sum, s) => sum + takes(buckets, s, 20, 0), 0)).toBe(50)
    expect(sources.reduce((sum, s) => sum + takes(buckets, s, 20, 100), 0)).toBe(5)
  })

  it('tracks at most maxSources, forgetting the one seen longest ago', () => {
    const buckets = new SourceBuckets({ perSecond: 2, maxSources: 3 }, 0)
    for (const s of ['a', 'b', 'c']) expect(takes(buckets, s, 5, 0)).toBe(2)
    expect(takes(buckets, 'a', 1, 0)).toBe(0) // 'a' is now the most recently seen
    expect(takes(buckets, 'd', 5, 0)).toBe(2) // forgets 'b'
    expect(buckets.size).toBe(3)
    expect(takes(buckets, 'a', 1, 0)).toBe(0) // still remembered, still empty
    expect(takes(buckets, 'b', 5, 0)).toBe(2) // forgotten: starts full, as after a quiet second
    for (let i = 0; i < 10_000; i++) buckets.take(`x${i}`, i)
    expect(buckets.size).toBe(3)
  })

  it('refuses a rate that is not a finite number above 0', () => {
    expect(() => new SourceBuckets({ perSecond: 0 })).toThrow(/perSecond must be a finite number above 0/)
    expect(() => new SourceBuckets({ maxSources: Number.NaN })).toThrow(/maxSources/)
  })
})
