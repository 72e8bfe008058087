// A TCP proxy on 127.0.0.1 that holds every chunk, each way, for `delayMs` before passing it on (in order):
// a slow link in front of one port, for kernels without tc netem. Loopback only: it never dials anything else.
import { connect, createServer, type Server, type Socket } from 'node:net'

export class DelayProxy {
  /** Added to each direction: a round trip through the proxy takes about twice this longer. */
  delayMs: number
  private readonly sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    delayMs: number,
  ) {
    this.delayMs = delayMs
  }

  /** Listens on a free loopback port and forwards each connection to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number, delayMs = 0): Promise<DelayProxy> {
    let proxy: DelayProxy | undefined
    const server = createServer((client) => proxy?.accept(client, targetPort))
    proxy = new DelayProxy(server, delayMs)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    return proxy
  }

  get port(): number {
    const address = this.server.address()
    if (address === null || typeof address === 'string') throw new Error('the delay proxy is not listening')
    return address.port
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1')
    for (const s of [client, upstream]) {
      s.setNoDelay(true)
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
      s.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    this.pipe(client, upstream)
    this.pipe(upstream, client)
  }

  /** Each chunk leaves `delayMs` after it arrived, never before the chunk ahead of it. */
  private pipe(from: Socket, to: Socket): void {
    let lastDue = 0
    from.on('data', (chunk: Buffer) => {
      const due = Math.max(performance.now() + this.delayMs, lastDue)
      lastDue = due
      setTimeout(() => to.writable && to.write(chunk), Math.max(0, due - performance.now()))
    })
    from.on('end', () => setTimeout(() => to.end(), Math.max(0, lastDue - performance.now())))
  }
}
