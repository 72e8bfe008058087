// The tracker as a STUN server (issue 39): a host behind a home router learns the address and port its router gave
// it (a server-reflexive ICE candidate) by a Binding Request to the tracker's UDP port. Only well-formed Binding
// Requests are answered (stun-binding.ts), each source address at most a few a second (source-buckets.ts); anything
// else gets silence. An answer is at most 24 bytes longer than its request (52 bytes at most), so it amplifies
// little, and the rate bound keeps a spoofed flood from aiming even that at anyone.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import { SourceBuckets, type SourceBucketsOptions } from './source-buckets'
import { bindingSuccess, parseBindingRequest } from './stun-binding'

export interface StunServerOptions extends SourceBucketsOptions {
  readonly log?: (line: string) => void
}

/** What the server did with the datagrams it got (for tests and the operator). */
export interface StunCounts {
  answered: number
  /** Not a well-formed Binding Request (or from port 0, which cannot be answered). */
  ignored: number
  /** Well-formed, but past its source's (or the server's) rate bound. */
  limited: number
}

export class StunServer {
  /** The UDP port it answers on (the one asked for, or the free one picked for 0). */
  readonly port: number
  readonly counts: StunCounts = { answered: 0, ignored: 0, limited: 0 }
  private closed: Promise<void> | undefined

  private constructor(
    private readonly socket: Socket,
    private readonly buckets: SourceBuckets,
  ) {
    this.port = socket.address().port
  }

  /**
   * Binds UDP `port` (0: a free one) on `host` (an IPv6 address such as '::' binds an IPv6 socket, dual-stack where
   * the system allows; anything else an IPv4 one) and answers from then on. Rejects when the port cannot be bound.
   */
  static async listen(port: number, host: string, options: StunServerOptions = {}): Promise<StunServer> {
    const buckets = new SourceBuckets(options)
    const socket = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4' })
    await new Promise<void>((resolve, reject) => {
      const failed = (err: Error) => {
        socket.close()
        reject(new Error(`the STUN server could not bind udp ${host}:${port} (${err.message}); pick another port`))
      }
      socket.once('error', failed)
      socket.bind(port, host, () => {
        socket.off('error', failed)
        resolve()
      })
    })
    const server = new StunServer(socket, buckets)
    // a send that fails (an unreachable network, a full buffer) is the sender's loss, never the server's
    socket.on('error', (err) => options.log?.(`stun: ${err.message}`))
    socket.on('message', (datagram, from) => server.answer(datagram, from))
    return server
  }

  private answer(datagram: Buffer, from: RemoteInfo): void {
    const request = parseBindingRequest(datagram)
    if (request === undefined || !(from.port > 0 && from.port < 65536)) {
      this.counts.ignored++
      return
    }
    if (!this.buckets.take(from.address)) {
      this.counts.limited++
      return
    }
    const response = bindingSuccess(request, from.address, from.port)
    if (response === undefined) {
      this.counts.ignored++
      return
    }
    this.counts.answered++
    try {
      this.socket.send(response, from.port, from.address, () => undefined)
    } catch {
      // a socket closed under us: nothing left to answer with
    }
  }

  /** Stops answering and releases the port; safe to call twice. */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      try {
        this.socket.close(() => resolve())
      } catch {
        resolve()
      }
    })
    return this.closed
  }
}
