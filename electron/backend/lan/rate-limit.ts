/** At most `limit` requests per `windowMs` from one address; the map forgets addresses whose window passed. */
export class RateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when the request from `address` may go on (and counts it). */
  take(address: string): boolean {
    const now = this.now()
    if (this.windows.size > 1024)
      for (const [a, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(a)
    const w = this.windows.get(address)
    if (w === undefined || now - w.start >= this.windowMs) {
      this.windows.set(address, { start: now, count: 1 })
      return true
    }
    w.count += 1
    return w.count <= this.limit
  }
}
