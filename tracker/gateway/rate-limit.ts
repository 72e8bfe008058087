import type { StoredAccount } from '../ledger/ledger-store'
import { GatewayError } from './errors'

/**
 * Counts in fixed windows: this process's memory, or Redis when several instances share the swarm (tracker/cluster/).
 */
export interface WindowCounter {
  /**
   * Adds one to `key`'s count in the window `windowMs` long that
   * holds `now`; returns the count and when that window ends.
   */
  hit(key: string, windowMs: number, now: number): Promise<{ count: number; endsAt: number }>
}

/**
 * One process's windows, aligned to the clock so that every
 * instance counts the same ones (one window length per counter).
 */
export class MemoryCounter implements WindowCounter {
  private readonly counts = new Map<string, number>()
  private start = 0

  async hit(key: string, windowMs: number, now: number): Promise<{ count: number; endsAt: number }> {
    const start = now - (now % windowMs)
    // A new window: the last one's counts go, so memory follows the keys active in this one.
    if (start !== this.start) {
      this.counts.clear()
      this.start = start
    }
    const count = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, count)
    return { count, endsAt: start + windowMs }
  }
}

/**
 * Requests per account in fixed one-minute windows: past the limit a request is refused (429) until the window ends.
 */
export class RateLimit {
  constructor(
    private readonly perMinute: number,
    private readonly counter: WindowCounter = new MemoryCounter(),
  ) {}

  async check(account: StoredAccount, now = Date.now()): Promise<void> {
    const { count, endsAt } = await this.counter.hit(`rate:${account.accountId}`, 60_000, now)
    if (count > this.perMinute) {
      throw new GatewayError(
        429,
        'rate_limit_exceeded',
        'rate_limit_exceeded',
        `account ${account.accountId} sent more than ${this.perMinute} requests this minute; retry in ` +
          `${Math.ceil((endsAt - now) / 1000)} s.`,
      )
    }
  }
}
