// bittorrent-tracker ships no types and has no @types package: the server surface Neuron uses.
declare module 'bittorrent-tracker' {
  import type { EventEmitter } from 'node:events'
  import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http'

  export interface ServerOptions {
    udp?: boolean
    http?: boolean
    ws?: boolean
    stats?: boolean
    trustProxy?: boolean
    interval?: number
    filter?: (infoHash: string, params: unknown, cb: (err: Error | null) => void) => void
  }

  export class Server extends EventEmitter {
    constructor(options?: ServerOptions)
    http: HttpServer | null
    torrents: Record<string, { complete: number; incomplete: number; peers: unknown }>
    listen(port: number, hostname: string, onListening?: () => void): void
    close(cb?: () => void): void
    onHttpRequest(req: IncomingMessage, res: ServerResponse, opts?: { action?: string }): void
  }
}

// bencode 4 ships no types: the two calls Neuron makes.
declare module 'bencode' {
  const bencode: { decode(data: Uint8Array): unknown; encode(value: unknown): Uint8Array }
  export default bencode
}
