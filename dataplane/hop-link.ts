import type WebSocket from 'ws'
import {
  ClientToTracker,
  callRpc,
  decodeFrame,
  type Frame,
  MAX_ROUND_TRIPS_PER_LINK,
  NeuronError,
  type RpcSocket,
  type WireError,
} from '../protocol'
import { FramePinger, PING_TIMEOUT_MS, Pinger } from './link-latency'

/** A hop's link is pinged on open and then every this many requests. */
export const PING_EVERY_REQUESTS = 16

import { LivenessWatch } from './liveness'
import { dataPlaneSocket, type TrustedCa } from './tls-trust'

export { LINK_SILENCE_MS } from './liveness'

/** How a client reaches one hop: a direct WebSocket, or the tracker's relay. */
export interface HopLink {
  /** Sends a frame and resolves with the hop's answering frame; error frames reject as NeuronError. */
  request(frame: Uint8Array): Promise<Frame>
  close(): void
  /**
   * Round trips to the host, ms, newest last: by WebSocket ping on a direct link, by ping frame through a relay (the
   * tracker's or a volunteer's circuit), so a relayed host is priced by what its path costs.
   */
  readonly roundTripsMs?: readonly number[]
  /**
   * Waits for a frame the host sends unasked for `session`'s `step` (hop-to-hop forwarding: a hop's digest, or the
   * token the last hop returns); only on a direct WebSocket. `cancel` stops waiting.
   */
  expect?(session: string, step: number): { answer: Promise<Frame>; cancel(): void }
  /** Payload bytes received, by frame kind (hop-to-hop forwarding keeps hidden states off a middle hop's link). */
  readonly bytesIn?: ReadonlyMap<string, number>
  /**
   * Measures one more round trip into roundTripsMs (a ping after the session's open, the host idle again); settles when
   * the pong is in or the ping is given up.
   */
  measure?(): Promise<void>
}

/** The answer to the frame `key` names, from `waiters` (settleAnswer): rejected after `timeoutMs` as hop_timeout. */
export function waitForAnswer(waiters: AnswerWaiters, key: string, hostId: string, timeoutMs: number): Promise<Frame> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiters.delete(key)
      reject(new HopFailure(hostId, 'hop_timeout', `host ${hostId} did not answer within ${timeoutMs} ms`))
    }, timeoutMs)
    waiters.set(key, {
      resolve: (f) => {
        clearTimeout(timer)
        resolve(f)
      },
      reject: (e) => {
        clearTimeout(timer)
        waiters.delete(key)
        reject(e)
      },
    })
  })
}

/**
 * One ping's round trip into `roundTripsMs` (the newest MAX_ROUND_TRIPS_PER_LINK), off the caller's path: the promise
 * settles (never rejects) once it is in or given up, for a caller that wants it.
 */
export function measureInto(
  pinger: { ping(timeoutMs: number): Promise<number | undefined> },
  roundTripsMs: number[],
): Promise<void> {
  return pinger.ping(PING_TIMEOUT_MS).then((ms) => {
    if (ms === undefined) return
    roundTripsMs.push(ms)
    if (roundTripsMs.length > MAX_ROUND_TRIPS_PER_LINK) roundTripsMs.shift()
  })
}

/** A hop failed in a way another host can repair (gone, unreachable, lost our session). */
export class HopFailure extends NeuronError {
  constructor(
    readonly hostId: string,
    code: string,
    message: string,
  ) {
    super(code, message, { hostId })
  }
}

/** What a frame's answer is matched by: its session and step. */
export function keyOf(frame: Frame | Uint8Array): string {
  const f = frame instanceof Uint8Array ? decodeFrame(frame) : frame
  return `${f.session}:${f.step}`
}

/**
 * The key a frame the host sends unasked (`expect`) is waited for under: apart from the answers to requests of the same
 * session and step, which a push must never settle (hop to hop, a hop's "my successor refused step 7" crossed the
 * answer to the client's fetch of step 7, and the fetch failed).
 */
export function pushKey(session: string, step: number): string {
  return `${session}:${step}:push`
}

/** Error codes only a push carries: never an answer to a request of the frame's session and step. */
const PUSHED_ONLY = new Set(['forward_refused'])

/** Waiters for answers, by keyOf, and for pushes, by pushKey. */
export type AnswerWaiters = Map<string, { resolve: (f: Frame) => void; reject: (e: Error) => void }>

/**
 * Hands the frame in `bytes` to whoever waits for its session and step (a typed error frame rejects); returns it, or
 * undefined when it is no frame at all (a peer's garbage is dropped).
 */
export function settleAnswer(waiters: AnswerWaiters, hostId: string, bytes: Uint8Array): Frame | undefined {
  let frame: Frame
  try {
    frame = decodeFrame(bytes)
  } catch {
    return undefined
  }
  const asked = keyOf(frame)
  const pushed = pushKey(frame.session, frame.step)
  // a push-only refusal goes to whoever waits for a push; any other frame answers a request first
  const key = pushedOnly(frame) ? pushed : waiters.has(asked) ? asked : pushed
  const waiter = waiters.get(key)
  if (waiter === undefined) return frame
  waiters.delete(key)
  try {
    waiter.resolve(rejectIfError(hostId, frame))
  } catch (error) {
    waiter.reject(error as Error)
  }
  return frame
}

function pushedOnly(frame: Frame): boolean {
  if (frame.kind !== 'error') return false
  try {
    return PUSHED_ONLY.has((JSON.parse(new TextDecoder().decode(frame.payload)) as WireError).code)
  } catch {
    return false
  }
}

/** A hop's answer, or the typed error it carries (HopFailure where another host can repair it). */
export function rejectIfError(hostId: string, frame: Frame): Frame {
  if (frame.kind !== 'error') return frame
  const body = JSON.parse(new TextDecoder().decode(frame.payload)) as WireError
  if (body.code === 'unknown_session' || body.code === 'draining')
    throw new HopFailure(hostId, body.code, `host ${hostId}: ${body.message}`)
  throw new NeuronError(body.code, `host ${hostId}: ${body.message}`, { hostId, ...body.details })
}

export class WebSocketHopLink implements HopLink {
  private readonly pending: AnswerWaiters = new Map()
  private closedWith: HopFailure | undefined
  readonly roundTripsMs: number[] = []
  readonly bytesIn = new Map<string, number>()
  private readonly pinger: Pinger | FramePinger
  private requests = 0
  /** While answers are awaited: a ping a second, the link down after LINK_SILENCE_MS of silence (liveness.ts). */
  private readonly liveness: LivenessWatch

  private constructor(
    private readonly hostId: string,
    private readonly socket: WebSocket,
    private readonly timeoutMs: number,
    /** Through a volunteer relay's circuit: its WebSocket pings reach only the relay, ping frames reach the host. */
    private readonly throughRelay: boolean,
  ) {
    this.liveness = new LivenessWatch({
      waiting: () => this.pending.size > 0,
      ping: () => {
        try {
          this.socket.ping()
        } catch {
          // closing: the close handler fails what waits
        }
      },
      down: (silentMs) => {
        this.fail(
          new HopFailure(
            hostId,
            'hop_unreachable',
            `host ${hostId} sent nothing, not even a pong, for ${Math.round(silentMs)} ms: its link is down`,
          ),
        )
        this.socket.terminate()
      },
    })
    socket.on('pong', () => this.liveness.heard())
    socket.on('message', (data) => {
      this.liveness.heard()
      const frame = settleAnswer(this.pending, hostId, data as Buffer)
      if (frame !== undefined)
        this.bytesIn.set(frame.kind, (this.bytesIn.get(frame.kind) ?? 0) + frame.payload.byteLength)
    })
    this.pinger = throughRelay ? new FramePinger((frame) => this.exchange(frame)) : new Pinger(socket)
    // Measured by ping, not by a step's time: the host's compute is in neither, and no host-reported figure is trusted.
    // Through a circuit, once its first frame (the session's open, which admits the circuit) is answered.
    if (!throughRelay) this.measure()
    socket.on('close', () =>
      this.fail(new HopFailure(hostId, 'hop_unreachable', `lost the connection to host ${hostId}`)),
    )
    socket.on('error', () =>
      this.fail(new HopFailure(hostId, 'hop_unreachable', `lost the connection to host ${hostId}`)),
    )
  }

  /**
   * `fingerprint`: the certificate a wss:// host must present (the route carries the one it signed); without it, `ca`:
   * certificates to trust besides the system's (see TrustedCa).
   */
  static connect(
    hostId: string,
    url: string,
    {
      timeoutMs = 120_000,
      ca,
      fingerprint,
      throughRelay = false,
    }: {
      timeoutMs?: number
      ca?: TrustedCa | undefined
      fingerprint?: string | undefined
      /** `url` is a volunteer relay's circuit to the host. */
      throughRelay?: boolean
    } = {},
  ): Promise<WebSocketHopLink> {
    return new Promise((resolve, reject) => {
      const socket = dataPlaneSocket(url, { fingerprint, ca, maxPayload: 256 * 1024 * 1024 })
      socket.binaryType = 'nodebuffer'
      socket.once('open', () => resolve(new WebSocketHopLink(hostId, socket, timeoutMs, throughRelay)))
      socket.once('error', (e) =>
        reject(new HopFailure(hostId, 'hop_unreachable', `cannot connect to host ${hostId} at ${url}: ${e.message}`)),
      )
    })
  }

  request(bytes: Uint8Array): Promise<Frame> {
    const answer = this.exchange(bytes)
    const n = ++this.requests
    if (this.throughRelay && n === 1)
      answer.then(
        () => this.measure(),
        () => {},
      )
    else if (!this.closedWith && n % PING_EVERY_REQUESTS === 0) this.measure()
    return answer
  }

  /** One frame out, its answer in (a ping frame's too), not counted as a request. */
  private exchange(bytes: Uint8Array): Promise<Frame> {
    const answer = this.wait(keyOf(bytes))
    if (!this.closedWith) this.socket.send(bytes)
    return answer
  }

  expect(session: string, step: number): { answer: Promise<Frame>; cancel(): void } {
    const key = pushKey(session, step)
    const answer = this.wait(key)
    // a wait cancelled or failed before anyone awaits it is no unhandled rejection
    answer.catch(() => {})
    return {
      answer,
      cancel: () => this.pending.get(key)?.reject(new HopFailure(this.hostId, 'cancelled', 'no longer waited for')),
    }
  }

  /** Resolves with the frame for `key` (session:step), failing on timeout, on the link's loss or its silence. */
  private wait(key: string): Promise<Frame> {
    if (this.closedWith) return Promise.reject(this.closedWith)
    const answer = waitForAnswer(this.pending, key, this.hostId, this.timeoutMs)
    this.liveness.watch()
    return answer
  }

  measure(): Promise<void> {
    return measureInto(this.pinger, this.roundTripsMs)
  }

  /** Whether the host answers a ping within `timeoutMs` (a kept link, before its next session trusts it). */
  async answers(timeoutMs: number): Promise<boolean> {
    return (await this.pinger.ping(timeoutMs)) !== undefined
  }

  /** Whether frames can still go out: not failed, not closing. */
  get open(): boolean {
    return this.closedWith === undefined && this.socket.readyState === this.socket.OPEN
  }

  close(): void {
    this.liveness.stop()
    this.socket.close()
  }

  private fail(error: HopFailure): void {
    this.liveness.stop()
    this.closedWith ??= error
    for (const waiter of this.pending.values()) waiter.reject(error)
    this.pending.clear()
  }
}

/** Frames to a host that accepts no connections, carried by the tracker. */
export class RelayHopLink implements HopLink {
  readonly roundTripsMs: number[] = []
  private readonly pinger = new FramePinger((frame) => this.relayed(frame, PING_TIMEOUT_MS))
  private requests = 0

  constructor(
    private readonly hostId: string,
    private readonly tracker: RpcSocket,
    private readonly timeoutMs = 120_000,
  ) {
    this.measure()
  }

  async request(bytes: Uint8Array): Promise<Frame> {
    if (++this.requests % PING_EVERY_REQUESTS === 0) this.measure()
    return this.relayed(bytes, this.timeoutMs)
  }

  /** A ping frame's round trip through the tracker to the host and back, as the session's frames go. */
  measure(): Promise<void> {
    return measureInto(this.pinger, this.roundTripsMs)
  }

  private async relayed(bytes: Uint8Array, timeoutMs: number): Promise<Frame> {
    try {
      const { frame } = await callRpc(
        this.tracker,
        ClientToTracker,
        'relay.forward',
        { hostId: this.hostId, frame: bytes },
        timeoutMs,
      )
      return rejectIfError(this.hostId, decodeFrame(frame))
    } catch (error) {
      if (error instanceof NeuronError && (error.code === 'host_unreachable' || error.code === 'timeout'))
        throw new HopFailure(this.hostId, error.code, error.message)
      throw error
    }
  }

  close(): void {}
}
