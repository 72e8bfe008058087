// A client's hops over a punched channel (punched-channel.ts): one channel to a host carries every session the client
// has with it, each session's link a view of it; frames and answers are matched by session and step as on a WebSocket.
import type { Frame } from '../protocol'
import {
  type AnswerWaiters,
  HopFailure,
  type HopLink,
  keyOf,
  measureInto,
  PING_EVERY_REQUESTS,
  settleAnswer,
  waitForAnswer,
} from './hop-link'
import { FramePinger, PING_TIMEOUT_MS } from './link-latency'
import type { FrameChannel } from './punched-channel'

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
    const answer = waitForAnswer(this.pending, key, this.hostId, timeoutMs)
    this.channel.send(bytes).catch((error: Error) => this.pending.get(key)?.reject(error))
    return answer
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
    measureInto(this.pinger, this.roundTripsMs)
  }
}
