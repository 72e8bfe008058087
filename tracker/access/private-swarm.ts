// A private swarm: who may use it (Admission), and how its BitTorrent routes tell a stranger no.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Namespace, Socket } from 'socket.io'

/**
 * Who may use the swarm. Without a list anyone may; with one, only the keys listed and the
 * tracker's own (its gateway's client among them), on every surface: Socket.IO, the gateway, the
 * dashboards and the BitTorrent routes, and the data plane through the tickets the tracker signs.
 */
export class Admission {
  private keys: ReadonlySet<string> | null

  constructor(
    keys: readonly string[] | null | undefined,
    /** Always admitted: a tracker never locks itself out. */
    private readonly own: readonly string[],
    /** The tracker's Socket.IO namespaces, whose connections carry the keys they proved. */
    private readonly namespaces: () => readonly Namespace[],
  ) {
    this.keys = keys == null ? null : new Set(keys)
  }

  /** True when `publicKey` may use the swarm; a caller with no key (null) only when the swarm is open. */
  admits(publicKey: string | null): boolean {
    if (this.keys === null) return true
    return publicKey !== null && (this.keys.has(publicKey) || this.own.includes(publicKey))
  }

  /** Another list (null: open to anyone); connections whose key it no longer admits are closed at once. */
  set(keys: readonly string[] | null): void {
    this.keys = keys === null ? null : new Set(keys)
    for (const socket of this.sockets())
      if (!this.admits((socket.data as { publicKey: string }).publicKey)) socket.disconnect(true)
  }

  /**
   * The BitTorrent routes of a private swarm answer only an address with an admitted Socket.IO
   * connection open: hosts join before they fetch, publishers before they seed. Simple, and it keeps
   * infohashes and peers from strangers; peers behind one NAT share its address, so it is as strong
   * as the network under it, no stronger (the models' bytes are checked by hash either way).
   */
  admitsTorrentPeer(req: IncomingMessage): boolean {
    if (this.keys === null) return true
    const from = plainAddress(req.socket.remoteAddress)
    for (const socket of this.sockets()) if (plainAddress(socket.handshake.address) === from) return true
    return false
  }

  private *sockets(): Generator<Socket> {
    for (const namespace of this.namespaces()) yield* namespace.sockets.values()
  }
}

/** Routes that name the swarm's torrents and peers: a private swarm answers them to its members only. */
export function namesTorrents(path: string): boolean {
  return path === '/announce' || path === '/scrape' || path.startsWith('/models/')
}

/** A connection's address, with an IPv4-mapped IPv6 address written as the IPv4 one. */
function plainAddress(address: string | undefined): string {
  return (address ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')
}

/**
 * Tells a stranger the torrents of a private swarm are not for it: a BitTorrent client reads a
 * bencoded `failure reason` (BEP 3) and shows it; a person fetching a .torrent reads the JSON.
 */
export function refuseStranger(req: IncomingMessage, res: ServerResponse, path: string): void {
  const message =
    `this is a private swarm: ` +
    `${path.startsWith('/models/') ? 'its torrents' : 'announces and scrapes'} are answered only to an address ` +
    `with an admitted Neuron connection open; join the tracker with a listed key first (ask the operator to add ` +
    `yours), then retry.`
  if (path.startsWith('/models/')) {
    res
      .writeHead(403, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { code: 'not_admitted', message } }))
    return
  }
  req.resume()
  const reason = Buffer.from(message)
  res
    .writeHead(200, { 'content-type': 'text/plain' })
    .end(Buffer.concat([Buffer.from(`d14:failure reason${reason.length}:`), reason, Buffer.from('e')]))
}
