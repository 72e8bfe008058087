// Asking a router for something that lapses (a mapped port, a firewall pinhole): now, then again on a schedule, one
// ask at a time (the next waits for the one in flight), until closed. A router that restarted has forgotten it.

export class AskAgain {
  private timer: NodeJS.Timeout | undefined
  private attempt: Promise<void> | undefined
  private rounds = 0
  private stopped = false

  constructor(
    private readonly ask: () => Promise<void>,
    /** How long after an ask the next is due, ms (read after each ask: what it learned may shorten it). */
    private readonly everyMs: () => number,
  ) {}

  get closed(): boolean {
    return this.stopped
  }

  /** Asks now (after the ask in flight), then on schedule. */
  now(): Promise<void> {
    clearTimeout(this.timer)
    const round = ++this.rounds
    this.attempt = (this.attempt ?? Promise.resolve())
      .then(() => this.ask())
      .finally(() => {
        if (!this.stopped && round === this.rounds)
          this.timer = setTimeout(() => void this.now(), this.everyMs()).unref()
      })
    return this.attempt
  }

  /** Asks no more; resolves once the ask in flight, if any, has settled. */
  async close(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.attempt?.catch(() => undefined)
  }
}
