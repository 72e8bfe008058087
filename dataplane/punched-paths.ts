// Where frames to a host behind a router that maps no port go, in order (issue 39): a channel punched through both
// routers (punched-channel.ts, the tracker carrying the offer and the answer), else the relay the route names (a
// volunteer's circuit, else the tracker's). A client keeps one per tracker connection for its hops; a host one for the
// successors it forwards to hop to hop. Each host's outcome is remembered: an open channel is kept for the next
// sessions with that host, a punch that failed is not tried again for RETRY_MS.
import { NeuronError } from '../protocol'
import { iceConfig, offerChannel } from './punched-channel'
import { PunchedPath } from './punched-link'

/** What punching needs of a tracker connection: its STUN port, and its signalling (a client's or a host's RPCs). */
export interface PunchSignalling {
  /** The tracker's URL (its STUN server answers on its address): the instance the connection is on now. */
  readonly url: string
  /** Its STUN port, null where it runs none (nothing is punched then). */
  stunPort(): Promise<number | null>
  /** Sends `offer` to `hostId` through the tracker; resolves with the host's answer. */
  offer(hostId: string, offer: string): Promise<string>
}

/** After a failed punch, how long before a host is tried again, ms (its router or ours may have changed). */
export const RETRY_MS = 5 * 60_000
/**
 * How long a session waits for a punch before it takes the relay, ms: a punch that works takes 0.2-0.5 s (ICE's
 * checks, DTLS, SCTP); one that cannot work would hold the session for PUNCH_TIMEOUT_MS.
 */
export const PUNCH_WAIT_MS = 2_000
/** Punched channels one client keeps open at most; past it the least recently used closes. */
const MAX_PATHS = 32

/** How this client reached a host last: what the Swarm screen shows beside it. */
export type PathKind = 'punched' | 'relayed'

export class PunchedPaths {
  private readonly paths = new Map<string, Promise<PunchedPath | undefined>>()
  private readonly failedAt = new Map<string, number>()

  constructor(
    private readonly signalling: PunchSignalling,
    private readonly log: (line: string) => void = () => {},
    private readonly timeoutMs?: number,
  ) {}

  /**
   * A punched path to `hostId`, kept from an earlier session or opened now; undefined when none opens within
   * `waitMs` (this session takes the relay; a punch still under way goes on, for the next session) or a punch to it
   * failed lately.
   */
  async to(hostId: string, waitMs = PUNCH_WAIT_MS): Promise<PunchedPath | undefined> {
    let opening = this.paths.get(hostId)
    const kept = opening !== undefined
    if (opening === undefined) {
      const failed = this.failedAt.get(hostId)
      if (failed !== undefined && Date.now() - failed < RETRY_MS) return undefined
      opening = this.punch(hostId)
      this.remember(hostId, opening)
    }
    const path = await within(opening, waitMs)
    if (path === undefined) return undefined
    if (!path.isOpen) {
      // closed since (the host's idle bound, a router's state lost): punched anew, once
      if (this.paths.get(hostId) === opening) this.paths.delete(hostId)
      return kept ? this.to(hostId, waitMs) : undefined
    }
    this.remember(hostId, opening)
    return path
  }

  /** Keeps `opening` as the most recently used path (the oldest closes past MAX_PATHS). */
  private remember(hostId: string, opening: Promise<PunchedPath | undefined>): void {
    this.paths.delete(hostId)
    this.paths.set(hostId, opening)
    if (this.paths.size > MAX_PATHS) {
      const [oldest, path] = this.paths.entries().next().value as [string, Promise<PunchedPath | undefined>]
      this.paths.delete(oldest)
      void path.then((p) => p?.close())
    }
  }

  /** Every host this client tried to punch to lately, with how it reaches it now. */
  outcomes(): { hostId: string; path: PathKind }[] {
    const punched = [...this.paths.keys()].map((hostId) => ({ hostId, path: 'punched' as const }))
    const relayed = [...this.failedAt.keys()].map((hostId) => ({ hostId, path: 'relayed' as const }))
    return [...punched, ...relayed]
  }

  close(): void {
    for (const path of this.paths.values()) void path.then((p) => p?.close())
    this.paths.clear()
  }

  private async punch(hostId: string): Promise<PunchedPath | undefined> {
    const started = performance.now()
    try {
      const stunPort = await this.signalling.stunPort()
      if (stunPort === null) throw new NeuronError('no_stun', 'the tracker runs no STUN server')
      const config = iceConfig(this.signalling.url, stunPort)
      const channel = await offerChannel((offer) => this.signalling.offer(hostId, offer), config, this.timeoutMs)
      this.failedAt.delete(hostId)
      this.log(`punched a channel to host ${hostId} in ${Math.round(performance.now() - started)} ms`)
      const path = new PunchedPath(hostId, channel)
      channel.onClose(() => {
        void this.paths.get(hostId)?.then((p) => {
          if (p === path) this.paths.delete(hostId)
        })
      })
      return path
    } catch (error) {
      this.failedAt.set(hostId, Date.now())
      if (this.failedAt.size > 4 * MAX_PATHS) this.failedAt.delete(this.failedAt.keys().next().value as string)
      this.paths.delete(hostId)
      this.log(`no punched channel to host ${hostId} (${(error as Error).message}): through the relay`)
      return undefined
    }
  }
}

/** What `promise` resolves within `ms`, else undefined (the promise goes on). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}
