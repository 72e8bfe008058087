import { describe, expect, it } from 'vitest'
import { FileRates } from './file-rates'

describe('each file’s download speed', () => {
  it('is the file’s own bytes over time, not the torrent’s total, and follows a stall', () => {
    const rates = new FileRates()
    expect(rates.rate('a.gguf', 0, 0)).toBe(0)
    expect(rates.rate('b.gguf', 0, 0)).toBe(0)
    // a takes 1 MB/s, b 3 MB/s: the torrent's 4 MB/s is neither
    expect(rates.rate('a.gguf', 1e6, 1000)).toBe(1e6)
    expect(rates.rate('b.gguf', 3e6, 1000)).toBe(3e6)
    expect(rates.rate('a.gguf', 2e6, 2000)).toBe(1e6)
    // a stalls: the window forgets its old progress within a few seconds
    for (let at = 3000; at <= 9000; at += 1000) rates.rate('a.gguf', 2e6, at)
    expect(rates.rate('a.gguf', 2e6, 10_000)).toBe(0)
  })
})
