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
  pushKey,
  settleAnswer,
  waitForAnswer,
} from './hop-link'
import { FramePinger, PING_TIMEOUT_MS } from './link-latency'
import { LivenessWatch } from './liveness'
import type { FrameChannel } from './punched-channel'

/**
 * The punched channel to one host, and the answers its sessions wait for. While any are awaited it is pinged once a
 * second: a router that lost its mapping (restarted) or a link cut drops the channel's packets silently, and the path
 * is closed after LINK_SILENCE_MS without a word from the host (its sessions fail over; the next punches anew).
 */
export class PunchedPath {
  private readonly pending: AnswerWaiters = new Map()
  private closedWith: HopFailure | undefined
  private readonly liveness: LivenessWatch

  constructor(
    readonly hostId: string,
    readonly channel: FrameChannel,
  ) {
    const pinger = new FramePinger((frame) => this.exchange(frame, PING_TIMEOUT_MS))
    this.liveness = new LivenessWatch({
      waiting: () => this.pending.size > 0,
      ping: () => void pinger.ping(PING_TIMEOUT_MS),
      down: (silentMs) =>
        this.closeWith(
          `host ${hostId} sent nothing on its punched channel for ${Math.round(silentMs)} ms: the path is down`,
        ),
    })
    channel.onFrame((bytes) => {
      this.liveness.heard()
      settleAnswer(this.pending, hostId, bytes)
    })
    channel.onClose(() => this.closeWith(`the punched channel to host ${hostId} closed`))
  }

  get isOpen(): boolean {
    return this.closedWith === undefined && this.channel.isOpen
  }

  /** `bytes` out, the frame that answers its session and step in (a typed error frame rejects). */
  exchange(bytes: Uint8Array, timeoutMs: number): Promise<Frame> {
    const key = keyOf(bytes)
    const answer = this.wait(key, timeoutMs)
    if (this.closedWith === undefined)
      this.channel.send(bytes).catch((error: Error) => this.pending.get(key)?.reject(error))
    return answer
  }

  /** Waits for a frame the host sends unasked for `session`'s `step` (hop to hop); `cancel` stops waiting. */
  expect(session: string, step: number, timeoutMs: number): { answer: Promise<Frame>; cancel(): void } {
    const key = pushKey(session, step)
    const answer = this.wait(key, timeoutMs)
    // a wait cancelled or failed before anyone awaits it is no unhandled rejection
    answer.catch(() => {})
    return {
      answer,
      cancel: () => this.pending.get(key)?.reject(new HopFailure(this.hostId, 'cancelled', 'no longer waited for')),
    }
  }

  close(): void {
    this.channel.close()
  }

  private wait(key: string, timeoutMs: number): Promise<Frame> {
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith)
    const answer = waitForAnswer(this.pending, key, this.hostId, timeoutMs)
    this.liveness.watch()
    return answer
  }

  private closeWith(why: string): void {
    this.liveness.stop()
    this.closedWith ??= new HopFailure(this.hostId, 'hop_unreachable', why)
    for (const waiter of [...this.pending.values()]) waiter.reject(this.closedWith)
    this.pending.clear()
    this.channel.close()
  }
}

/** One session's hop over a punched path: measured by ping frame, closing it leaves the path for the next session. */
export class PunchedHopLink implements HopLink {
  readonly roundTripsMs: number[] = []
  readonly bytesIn = new Map<string, number>()
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
    return this.counted(this.path.exchange(bytes, this.timeoutMs))
  }

  expect(session: string, step: number): { answer: Promise<Frame>; cancel(): void } {
    const expected = this.path.expect(session, step, this.timeoutMs)
    const answer = this.counted(expected.answer)
    answer.catch(() => {})
    return { answer, cancel: expected.cancel }
  }

  /** `answer`, its payload's bytes counted by kind (this session's frames: the path carries others too). */
  private async counted(answer: Promise<Frame>): Promise<Frame> {
    const frame = await answer
    this.bytesIn.set(frame.kind, (this.bytesIn.get(frame.kind) ?? 0) + frame.payload.byteLength)
    return frame
  }

  close(): void {}

  measure(): Promise<void> {
    return measureInto(this.pinger, this.roundTripsMs)
  }
}
