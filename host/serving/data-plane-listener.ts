import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { type WebSocket, WebSocketServer } from 'ws'
import type { TlsCertificate } from '../../dataplane/tls-trust'
import { decodeFrame, errorFrame } from '../../protocol'
import { answerDialBack, type DialBackProver } from '../network/dial-back-answer'
import type { FrameCaller } from './served-session'

export interface DataPlaneListenerOptions {
  /** One frame in from a caller, one frame out (ShardServer.handle). */
  handle(bytes: Uint8Array, caller: FrameCaller): Promise<Uint8Array>
  /** Takes WebSocket upgrades on other paths (a volunteer relay's); true when it took this one. */
  upgrades?(req: IncomingMessage, socket: Socket, head: Buffer): boolean
  readonly maxFrameBytes: number
  /** WebSocket connections at once (default 256), and frames one connection may have in flight (default 8). */
  readonly maxConnections?: number | undefined
  readonly maxInFlightPerConnection?: number | undefined
  /** Signs the tracker's dial-back at DIAL_BACK_PATH (absent: it answers 503). */
  readonly dialBack?: DialBackProver | undefined
  readonly log?: ((line: string) => void) | undefined
}

/**
 * A host's data-plane port: HTTP or TLS, answering the tracker's dial-back, and WebSocket connections whose binary
 * frames go to `handle`, each connection bounded in frames in flight, the port in connections.
 */
export class DataPlaneListener {
  private connections = 0
  /**
   * Open connections by caller: a session's later frames (hop-to-hop forwarding) are pushed to the one that opened it.
   */
  private readonly callers = new Map<FrameCaller, WebSocket>()

  private constructor(
    /** The HTTP or TLS server under `wss` (ws does not close a server it was given). */
    private readonly http: HttpServer,
    private readonly wss: WebSocketServer,
    readonly endpoint: string,
  ) {}

  static async listen(
    port: number,
    host: string,
    tls: TlsCertificate | undefined,
    o: DataPlaneListenerOptions,
  ): Promise<DataPlaneListener> {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => answerDialBack(req, res, o.dialBack)
    const http =
      tls === undefined ? createHttpServer(onRequest) : createHttpsServer({ key: tls.key, cert: tls.cert }, onRequest)
    // ws closes a connection whose message passes maxPayload; below that, oversized frames get a typed error.
    const wss = new WebSocketServer({ noServer: true, maxPayload: 2 * o.maxFrameBytes })
    http.on('upgrade', (req, socket: Socket, head) => {
      if (o.upgrades?.(req, socket, head) === true) return
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
    })
    await new Promise<void>((resolve, reject) => {
      http.once('listening', () => resolve())
      http.once('error', reject)
      http.listen(port, host)
    })
    const listener = new DataPlaneListener(
      http,
      wss,
      // an IPv6 host in brackets (`ws://:::7100/` is no URL; `ws://[::]:7100/` is)
      `${tls === undefined ? 'ws' : 'wss'}://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:` +
        `${(http.address() as AddressInfo).port}/`,
    )
    wss.on('connection', (socket: WebSocket) => listener.serve(socket, o))
    return listener
  }

  private serve(socket: WebSocket, o: DataPlaneListenerOptions): void {
    if (this.wss.clients.size > (o.maxConnections ?? 256)) {
      socket.close(1013, 'this host has too many connections; try again later')
      return
    }
    const caller = `ws:${++this.connections}`
    this.callers.set(caller, socket)
    socket.on('close', () => this.callers.delete(caller))
    const maxInFlight = o.maxInFlightPerConnection ?? 8
    let inFlight = 0
    socket.on('message', async (data, isBinary) => {
      // A rejection here would be unhandled and end the host: whatever fails is logged, not thrown.
      try {
        const bytes = isBinary
          ? Buffer.isBuffer(data)
            ? data
            : Buffer.concat(data as Buffer[])
          : Buffer.from(String(data))
        if (inFlight >= maxInFlight) {
          socket.send(
            refusal(
              bytes,
              'too_many_in_flight',
              `a connection may have ${maxInFlight} frames in flight; wait for answers before sending more.`,
            ),
          )
          return
        }
        inFlight++
        const reply = await o.handle(bytes, caller).finally(() => inFlight--)
        if (socket.readyState === socket.OPEN) socket.send(reply)
      } catch (error) {
        o.log?.(`data-plane message from ${caller} failed: ${error instanceof Error ? error.message : error}`)
      }
    })
    socket.on('error', (e) => o.log?.(`data-plane socket: ${e.message}`))
  }

  /** Sends `bytes` to `caller` unasked; false when it is not a connection open here (a relayed caller, or gone). */
  push(caller: FrameCaller, bytes: Uint8Array): boolean {
    const socket = this.callers.get(caller)
    if (socket === undefined || socket.readyState !== socket.OPEN) return false
    socket.send(bytes)
    return true
  }

  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate()
    await new Promise<void>((resolve) => this.wss.close(() => resolve()))
    this.http.closeAllConnections()
    await new Promise<void>((resolve) => this.http.close(() => resolve()))
  }
}

/** An error answer to `bytes`, addressed to its session and step where they parse. */
function refusal(bytes: Uint8Array, code: string, message: string): Uint8Array {
  let to = { session: '0'.repeat(32), step: 0 }
  try {
    to = decodeFrame(bytes)
  } catch {}
  return errorFrame(to.session, to.step, { code, message })
}
