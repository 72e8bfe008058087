// Where a client's frames to a host behind a router that maps no port go, in order (issue 39): a channel punched
// through both routers (dataplane/punched-channel.ts, the tracker carrying the offer and the answer), else the relay
// the route names (a volunteer's circuit, else the tracker's). Each host's outcome is remembered: an open channel is
// kept for the client's next sessions with that host, a punch that failed is not tried again for RETRY_MS.
import { iceConfig, offerChannel } from '../dataplane/punched-channel'
import { PunchedPath } from '../dataplane/punched-link'
import type { TrackerChannel } from '../dataplane/tracker-link'
import { ClientToTracker, callRpc, NeuronError } from '../protocol'

/** After a failed punch, how long before a host is tried again, ms (its router or ours may have changed). */
export const RETRY_MS = 5 * 60_000
/** Punched channels one client keeps open at most; past it the least recently used closes. */
const MAX_PATHS = 32

/** How this client reached a host last: what the Swarm screen shows beside it. */
export type PathKind = 'punched' | 'relayed'

export class PunchedPaths {
  private readonly paths = new Map<string, Promise<PunchedPath | undefined>>()
  private readonly failedAt = new Map<string, number>()
  /** The tracker's STUN port (stun.port), asked once; null: it runs none, and nothing is punched. */
  private stunPort: Promise<number | null> | undefined

  constructor(
    private readonly tracker: TrackerChannel,
    /** The tracker's URL (its STUN server answers on its port): the instance the channel is on, else this. */
    private readonly trackerUrl: string,
    private readonly log: (line: string) => void = () => {},
    private readonly timeoutMs?: number,
  ) {}

  /** A punched path to `hostId`, opened now or kept from an earlier session; undefined when none opens. */
  async to(hostId: string): Promise<PunchedPath | undefined> {
    const kept = this.paths.get(hostId)
    if (kept !== undefined) {
      const path = await kept
      if (path?.isOpen === true || path === undefined) {
        // most recently used last
        this.paths.delete(hostId)
        this.paths.set(hostId, kept)
        if (path !== undefined) return path
      }
      if (this.paths.get(hostId) === kept) this.paths.delete(hostId)
    }
    const failed = this.failedAt.get(hostId)
    if (failed !== undefined && Date.now() - failed < RETRY_MS) return undefined
    const opening = this.punch(hostId)
    this.paths.set(hostId, opening)
    if (this.paths.size > MAX_PATHS) {
      const [oldest, path] = this.paths.entries().next().value as [string, Promise<PunchedPath | undefined>]
      this.paths.delete(oldest)
      void path.then((p) => p?.close())
    }
    return opening
  }

  /** What this client knows of how it reaches `hostId` (undefined: never tried). */
  outcome(hostId: string): PathKind | undefined {
    if (this.failedAt.has(hostId)) return 'relayed'
    return this.paths.has(hostId) ? 'punched' : undefined
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
    const url = this.tracker.url ?? this.trackerUrl
    const started = performance.now()
    try {
      this.stunPort ??= callRpc(this.tracker, ClientToTracker, 'stun.port', {}).then((a) => a.port)
      const stunPort = await this.stunPort.catch((error: Error) => {
        this.stunPort = undefined // asked again next time
        throw error
      })
      if (stunPort === null) throw new NeuronError('no_stun', 'the tracker runs no STUN server')
      const signal = async (offer: string) =>
        (await callRpc(this.tracker, ClientToTracker, 'punch.open', { hostId, offer })).answer
      const channel = await offerChannel(signal, iceConfig(url, stunPort), this.timeoutMs)
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
