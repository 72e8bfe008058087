// A link's liveness while answers are awaited (a hop's WebSocket, a punched channel): pinged once a second, and
// declared down after LINK_SILENCE_MS in which nothing came from the host, not even a pong. A router whose link was cut
// or whose state was lost drops packets silently; without this a step would wait out its whole timeout.

/** While a request waits, the link is pinged this often, ms: a host answers pings even mid-compute. */
export const LIVENESS_PING_MS = 1_000
/**
 * A link that carried nothing, not even a pong, this long while a request waits is down (a router's link cut, a
 * laptop closed): the step fails over then instead of waiting out its timeout, ms.
 */
export const LINK_SILENCE_MS = 4_000

export interface LivenessLink {
  /** Whether answers are awaited (the watch stops when none are). */
  waiting(): boolean
  /** Sends one ping (its answer, like any frame, is heard()). */
  ping(): void
  /** Nothing heard for `silentMs` while answers were awaited: the link is down. */
  down(silentMs: number): void
}

export class LivenessWatch {
  private lastHeard = performance.now()
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly link: LivenessLink) {}

  /** Something came from the host. */
  heard(): void {
    this.lastHeard = performance.now()
  }

  /** Watches while answers are awaited (a no-op while it already does). */
  watch(): void {
    if (this.timer !== undefined) return
    this.lastHeard = Math.max(this.lastHeard, performance.now() - LIVENESS_PING_MS)
    this.timer = setInterval(() => {
      if (!this.link.waiting()) return this.stop()
      const silentMs = performance.now() - this.lastHeard
      if (silentMs <= LINK_SILENCE_MS) return this.link.ping()
      this.stop()
      this.link.down(silentMs)
    }, LIVENESS_PING_MS)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }
}
