import WebSocket from 'ws'
import { ClientToTracker, callRpc, decodeFrame, type Frame, MAX_ROUND_TRIPS_PER_LINK, NeuronError, type RpcSocket, type WireError } from '../protocol'
import { PING_TIMEOUT_MS, Pinger } from './link-latency'

/** A hop's link is pinged on open and then every this many requests. */
const PING_EVERY_REQUESTS = 16

import { caOption, type TrustedCa } from './tls-trust'

/** How a client reaches one hop: a direct WebSocket, or the tracker's relay. */
export interface HopLink {
  /** Sends a frame and resolves with the hop's answering frame; error frames reject as NeuronError. */
  request(frame: Uint8Array): Promise<Frame>
  close(): void
  /** WebSocket ping round trips to the host, ms, newest last (none through the relay). */
  readonly roundTripsMs?: readonly number[]
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

function keyOf(frame: Frame | Uint8Array): string {
  const f = frame instanceof Uint8Array ? decodeFrame(frame) : frame
  return `${f.session}:${f.step}`
}

/** A hop's answer, or the typed error it carries (HopFailure where another host can repair it). */
export function rejectIfError(hostId: string, frame: Frame): Frame {
  if (frame.kind !== 'error') return frame
  const body = JSON.parse(new TextDecoder().decode(frame.payload)) as WireError
  if (body.code === 'unknown_session' || body.code === 'draining') throw new HopFailure(hostId, body.code, `host ${hostId}: ${body.message}`)
  throw new NeuronError(body.code, `host ${hostId}: ${body.message}`, { hostId, ...body.details })
}

export class WebSocketHopLink implements HopLink {
  private readonly pending = new Map<string, { resolve: (f: Frame) => void; reject: (e: Error) => void }>()
  private closedWith: HopFailure | undefined
  readonly roundTripsMs: number[] = []
  private readonly pinger: Pinger
  private requests = 0

  private constructor(
    private readonly hostId: string,
    private readonly socket: WebSocket,
    private readonly timeoutMs: number,
  ) {
    socket.on('message', (data) => {
      let frame: Frame
      try {
        frame = decodeFrame(data as Buffer)
      } catch {
        return
      }
      const key = keyOf(frame)
      const waiter = this.pending.get(key)
      if (waiter === undefined) return
      this.pending.delete(key)
      try {
        waiter.resolve(rejectIfError(hostId, frame))
      } catch (error) {
        waiter.reject(error as Error)
      }
    })
    this.pinger = new Pinger(socket)
    // Measured by ping, not by a step's time: the host's compute is in neither, and no host-reported figure is trusted.
    this.measure()
    socket.on('close', () => this.fail(new HopFailure(hostId, 'hop_unreachable', `lost the connection to host ${hostId}`)))
    socket.on('error', () => this.fail(new HopFailure(hostId, 'hop_unreachable', `lost the connection to host ${hostId}`)))
  }

  /** `ca`: certificates to trust for a wss:// host besides the system's (see TrustedCa). */
  static connect(hostId: string, url: string, { timeoutMs = 120_000, ca }: { timeoutMs?: number; ca?: TrustedCa } = {}): Promise<WebSocketHopLink> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { maxPayload: 256 * 1024 * 1024, ...caOption(ca) })
      socket.binaryType = 'nodebuffer'
      socket.once('open', () => resolve(new WebSocketHopLink(hostId, socket, timeoutMs)))
      socket.once('error', (e) => reject(new HopFailure(hostId, 'hop_unreachable', `cannot connect to host ${hostId} at ${url}: ${e.message}`)))
    })
  }

  request(bytes: Uint8Array): Promise<Frame> {
    if (this.closedWith) return Promise.reject(this.closedWith)
    const key = keyOf(bytes)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key)
        reject(new HopFailure(this.hostId, 'hop_timeout', `host ${this.hostId} did not answer within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
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
      this.socket.send(bytes)
      if (++this.requests % PING_EVERY_REQUESTS === 0) this.measure()
    })
  }

  private measure(): void {
    void this.pinger.ping(PING_TIMEOUT_MS).then((ms) => {
      if (ms === undefined) return
      this.roundTripsMs.push(ms)
      if (this.roundTripsMs.length > MAX_ROUND_TRIPS_PER_LINK) this.roundTripsMs.shift()
    })
  }

  close(): void {
    this.socket.close()
  }

  private fail(error: HopFailure): void {
    this.closedWith ??= error
    for (const waiter of this.pending.values()) waiter.reject(error)
    this.pending.clear()
  }
}

/** Frames to a host that accepts no connections, carried by the tracker. */
export class RelayHopLink implements HopLink {
  constructor(
    private readonly hostId: string,
    private readonly tracker: RpcSocket,
    private readonly timeoutMs = 120_000,
  ) {}

  async request(bytes: Uint8Array): Promise<Frame> {
    try {
      const { frame } = await callRpc(this.tracker, ClientToTracker, 'relay.forward', { hostId: this.hostId, frame: bytes }, this.timeoutMs)
      return rejectIfError(this.hostId, decodeFrame(frame))
    } catch (error) {
      if (error instanceof NeuronError && (error.code === 'host_unreachable' || error.code === 'timeout'))
        throw new HopFailure(this.hostId, error.code, error.message)
      throw error
    }
  }

  close(): void {}
}
