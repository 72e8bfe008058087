import type { StoredAccount } from '../ledger/ledger-store'
import { GatewayError } from './errors'

/** Requests per account in fixed one-minute windows: past the limit a request is refused (429) until the window ends. */
export class RateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(private readonly perMinute: number) {}

  check(account: StoredAccount): void {
    const now = Date.now()
    const w = this.windows.get(account.accountId)
    if (w === undefined || now - w.start >= 60_000) {
      this.windows.set(account.accountId, { start: now, count: 1 })
      return
    }
    w.count++
    if (w.count > this.perMinute) {
      throw new GatewayError(
        429,
        'rate_limit_exceeded',
        'rate_limit_exceeded',
        `account ${account.accountId} sent more than ${this.perMinute} requests this minute; retry in ${Math.ceil((w.start + 60_000 - now) / 1000)} s.`,
      )
    }
  }
}
