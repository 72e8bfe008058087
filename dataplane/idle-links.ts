// Idle WebSocket links to hosts, kept for the next session to the same host: a host's links to the next hops it
// forwards to (host/serving/forwarding.ts), and a long-lived client's (the app's, the gateway's) links to the hops of
// its routes (client/open-hops.ts). That session's first frame then pays no TCP, TLS and WebSocket handshakes: between
// homes three round trips a link (bench:peers, homes 40 ms one way: ~1 s on a 3-hop route's first forwarded step,
// measured). A link is used by one session at a time, as before; only between sessions it waits here, a bounded
// time, a bounded number per host.
import type { WebSocketHopLink } from './hop-link'

/** The key a link is kept under: the host's endpoint and the certificate it must present. */
export function linkKey(endpoint: string, fingerprint: string | undefined): string {
  return `${endpoint} ${fingerprint ?? ''}`
}

/** How long an idle link waits for the next session to the same successor. */
export const IDLE_LINK_MS = 60_000
/** Idle links kept per successor (a host forwards to a successor for as many sessions at once as it serves). */
export const IDLE_LINKS_PER_SUCCESSOR = 4
/** Idle links kept in all: clients name successors, so a client naming many of its own must not grow this. */
export const IDLE_LINKS_MAX = 32

/** How long a kept link's ping may take before the link counts as gone silent: its fastest ping four times, or this. */
const KEPT_LINK_PING_MS = 1_000

/**
 * Whether a kept link's host answers a ping within KEPT_LINK_PING_MS (or four times its fastest ping): taken for a new
 * session, a link whose path a router dropped without a word (no close, no reset) would be found dead only by its own
 * silence watch, LINK_SILENCE_MS into the session's first step.
 */
export function keptLinkAnswers(link: WebSocketHopLink): Promise<boolean> {
  return link.answers(keptLinkPingBound(link))
}

/** The longest a kept link's pong may take, ms. */
export function keptLinkPingBound(link: Pick<WebSocketHopLink, 'roundTripsMs'>): number {
  return Math.max(KEPT_LINK_PING_MS, 4 * Math.min(...link.roundTripsMs, KEPT_LINK_PING_MS))
}

interface Parked {
  readonly link: WebSocketHopLink
  readonly timer: NodeJS.Timeout
}

export class IdleLinks {
  private readonly parked = new Map<string, Parked[]>()
  private closed = false

  constructor(
    private readonly keepMs = IDLE_LINK_MS,
    private readonly perSuccessor = IDLE_LINKS_PER_SUCCESSOR,
    private readonly max = IDLE_LINKS_MAX,
  ) {}

  /** A link to `successor` (its endpoint and certificate) still open, newest first; undefined where none waits. */
  take(successor: string): WebSocketHopLink | undefined {
    const list = this.parked.get(successor)
    while (list !== undefined && list.length > 0) {
      const { link, timer } = list.pop() as Parked
      clearTimeout(timer)
      if (list.length === 0) this.parked.delete(successor)
      if (link.open) return link
      link.close()
    }
    return undefined
  }

  /**
   * Keeps an open link for the next session to `successor`; closes it when it is closed, when the host stops, when
   * every slot is taken, or after keepMs. A successor's oldest link gives way to its newest.
   */
  park(successor: string, link: WebSocketHopLink): void {
    if (!link.open || this.closed) {
      link.close()
      return
    }
    const list = this.parked.get(successor) ?? []
    while (list.length > 0 && (list.length >= this.perSuccessor || this.size >= this.max)) {
      const oldest = list.shift() as Parked
      clearTimeout(oldest.timer)
      oldest.link.close()
    }
    if (this.size >= this.max) {
      link.close()
      return
    }
    const timer = setTimeout(() => {
      const at = list.findIndex((p) => p.link === link)
      if (at >= 0) list.splice(at, 1)
      if (list.length === 0 && this.parked.get(successor) === list) this.parked.delete(successor)
      link.close()
    }, this.keepMs)
    timer.unref()
    list.push({ link, timer })
    this.parked.set(successor, list)
  }

  /** Idle links held, over every successor. */
  get size(): number {
    let n = 0
    for (const list of this.parked.values()) n += list.length
    return n
  }

  /** Closes every idle link, and each one parked after (the host stops). */
  close(): void {
    this.closed = true
    for (const list of this.parked.values())
      for (const { link, timer } of list) {
        clearTimeout(timer)
        link.close()
      }
    this.parked.clear()
  }
}
