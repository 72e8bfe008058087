import type { AddressInfo, Server } from 'node:net'
import WebTorrent from 'webtorrent'
import { NeuronError } from '../../protocol'

/** Where a store's BitTorrent client listens and whether it asks the router for its port. */
export interface TorrentClientOptions {
  /** BitTorrent TCP port; 0 picks a free one. */
  readonly torrentPort?: number | undefined
  /** Address the BitTorrent TCP port binds to; absent, every interface. */
  readonly torrentHost?: string | undefined
  readonly portMapping?: boolean | undefined
  readonly log?: ((line: string) => void) | undefined
}

/**
 * A webtorrent client over TCP alone (no DHT, LSD, uTP or web seeds: peers come from the swarm's tracker), and when it
 * listens.
 */
export function torrentClient(options: TorrentClientOptions): { client: WebTorrent.Instance; ready: Promise<void> } {
  const client = new WebTorrent({
    dht: false,
    lsd: false,
    utp: false,
    webSeeds: false,
    natUpnp: options.portMapping === true,
    natPmp: options.portMapping === true,
    torrentPort: options.torrentPort ?? 0,
  } as WebTorrent.Options)
  if (options.torrentHost !== undefined) bindTorrentServer(client, options.torrentHost, options.torrentPort ?? 0)
  client.on('error', (e) => options.log?.(`torrent client: ${e instanceof Error ? e.message : e}`))
  const ready = new Promise<void>((resolve) => {
    if ((client as unknown as { listening?: boolean }).listening) resolve()
    else client.once('listening', () => resolve())
  })
  return { client, ready }
}

/** Where the client's BitTorrent TCP server listens. */
export function torrentAddress(client: WebTorrent.Instance): AddressInfo {
  // webtorrent 3's address() is its TCP server's; its @types predate it.
  return (client as unknown as { address(): AddressInfo }).address()
}

/**
 * webtorrent 3 starts its TCP server on every interface in its constructor and has no option for
 * the address: close it at once (nothing has connected yet) and listen again where asked. Its
 * 'listening' callback fires once, for the new address.
 */
function bindTorrentServer(client: WebTorrent.Instance, host: string, port: number): void {
  const server = (client as unknown as { _connPool?: { tcpServer?: Server } })._connPool?.tcpServer
  if (server === undefined)
    throw new NeuronError(
      'internal',
      'this webtorrent has no TCP server to bind; check its version against package.json.',
    )
  server.close()
  server.listen(port, host)
}

/** webtorrent 3 marks finished files with `done`; its @types predate that. */
export function isDone(file: WebTorrent.TorrentFile): boolean {
  return (file as unknown as { done: boolean }).done
}

export function onceReady(t: WebTorrent.Torrent): Promise<void> {
  if ((t as unknown as { ready: boolean }).ready) return Promise.resolve()
  return new Promise((resolve, reject) => {
    t.once('ready', () => resolve())
    t.once('error', (e) => reject(e instanceof Error ? e : new Error(String(e))))
  })
}
