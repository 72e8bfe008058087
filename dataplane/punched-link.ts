// A client's hops over a punched channel (punched-channel.ts): one channel to a host carries every session the client
// has with it, each session's link a view of it; frames and answers are matched by session and step as on a WebSocket.
import { type Frame, MAX_ROUND_TRIPS_PER_LINK } from '../protocol'
import { type AnswerWaiters, HopFailure, type HopLink, keyOf, settleAnswer } from './hop-link'
import { FramePinger, PING_TIMEOUT_MS } from './link-latency'
import type { FrameChannel } from './punched-channel'

/** A session's link is pinged on open and then every this many requests (as a WebSocket link is). */
const PING_EVERY_REQUESTS = 16

/** The punched channel to one host, and the answers its sessions wait for. */
export class PunchedPath {
  private readonly pending: AnswerWaiters = new Map()
  private closedWith: HopFailure | undefined

  constructor(
    readonly hostId: string,
    readonly channel: FrameChannel,
  ) {
    channel.onFrame((bytes) => settleAnswer(this.pending, hostId, bytes))
    channel.onClose(() => {
      this.closedWith = new HopFailure(hostId, 'hop_unreachable', `the punched channel to host ${hostId} closed`)
      for (const waiter of this.pending.values()) waiter.reject(this.closedWith)
      this.pending.clear()
    })
  }

  get isOpen(): boolean {
    return this.closedWith === undefined && this.channel.isOpen
  }

  /** `bytes` out, the frame that answers its session and step in (a typed error frame rejects). */
  exchange(bytes: Uint8Array, timeoutMs: number): Promise<Frame> {
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith)
    const key = keyOf(bytes)
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key)
        reject(new HopFailure(this.hostId, 'hop_timeout', `host ${this.hostId} did not answer within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(key, {
        resolve: (f) => {
          clearTimeout(timer)
          resolve(f)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      this.channel.send(bytes).catch((error: Error) => this.pending.get(key)?.reject(error))
    })
  }

  close(): void {
    this.channel.close()
  }
}

/** One session's hop over a punched path: measured by ping frame, closing it leaves the path for the next session. */
export class PunchedHopLink implements HopLink {
  readonly roundTripsMs: number[] = []
  private readonly pinger: FramePinger
  private requests = 0

  constructor(
    private readonly path: PunchedPath,
    private readonly timeoutMs = 120_000,
  ) {
    this.pinger = new FramePinger((frame) => path.exchange(frame, PING_TIMEOUT_MS))
    this.measure()
  }

  request(bytes: Uint8Array): Promise<Frame> {
    if (++this.requests % PING_EVERY_REQUESTS === 0) this.measure()
    return this.path.exchange(bytes, this.timeoutMs)
  }

  close(): void {}

  private measure(): void {
    void this.pinger.ping(PING_TIMEOUT_MS).then((ms) => {
      if (ms === undefined) return
      this.roundTripsMs.push(ms)
      if (this.roundTripsMs.length > MAX_ROUND_TRIPS_PER_LINK) this.roundTripsMs.shift()
    })
  }
}
