import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Server as BitTorrentTracker } from 'bittorrent-tracker'
import { type Namespace, type Socket, Server as SocketServer } from 'socket.io'
import { ClientToTracker, callRpc, HostToTracker, NeuronError, type RpcHandlers, serveRpc, TrackerToHost, type WireError } from '../protocol'
import { ChallengeIssuer } from './auth'
import { ModelCatalog } from './catalog'
import { SwarmPlanner } from './planner'
import { HostRegistry } from './registry'
import { SqliteTrackerStore, type TrackerStore } from './store'

export interface TrackerOptions {
  /** 0 picks a free port. */
  readonly port?: number
  readonly host?: string
  /** SQLite file; ':memory:' for a throwaway swarm. */
  readonly dbPath: string
  readonly heartbeatMs?: number
  /** A private swarm admits only these public keys (base64url); absent, anyone may join. */
  readonly allowedKeys?: readonly string[]
  /** Largest Socket.IO message (relayed frames included), bytes. */
  readonly maxMessageBytes?: number
  readonly log?: (line: string) => void
}

interface Peer {
  readonly nodeId: string
  readonly publicKey: string
  readonly socket: Socket
}

/**
 * One process, one port: HTTP (challenges, the BitTorrent tracker's /announce), Socket.IO
 * namespaces /hosts and /clients. Every message is parsed with protocol/ schemas; a bad one gets a
 * typed error and the tracker keeps serving.
 */
export class Tracker {
  readonly registry: HostRegistry
  readonly catalog: ModelCatalog
  readonly planner: SwarmPlanner
  /** Malformed or failed requests, counted per code (for tests and the operator). */
  readonly rejected = new Map<string, number>()
  private readonly issuer = new ChallengeIssuer()
  private readonly hostSockets = new Map<string, Socket>()
  private readonly http = createServer((req, res) => this.onHttp(req, res))
  private readonly io: SocketServer
  private readonly bittorrent = new BitTorrentTracker({ http: false, udp: false, ws: false, stats: false })

  private constructor(
    readonly store: TrackerStore,
    private readonly options: TrackerOptions,
  ) {
    this.registry = new HostRegistry(options.heartbeatMs ?? 5000)
    this.catalog = new ModelCatalog(store, this.registry)
    this.planner = new SwarmPlanner(this.registry, this.catalog)
    this.bittorrent.on('warning', (e: Error) => this.log(`bittorrent: ${e.message}`))
    this.io = new SocketServer(this.http, { serveClient: false, maxHttpBufferSize: options.maxMessageBytes ?? 64 * 1024 * 1024 })
    this.setUpHosts(this.io.of('/hosts'))
    this.setUpClients(this.io.of('/clients'))
    this.registry.on('offline', (hostId, why) => this.log(`host ${hostId} offline: ${why}`))
  }

  static async start(options: TrackerOptions): Promise<Tracker> {
    const tracker = new Tracker(new SqliteTrackerStore(options.dbPath), options)
    await new Promise<void>((resolve, reject) => {
      tracker.http.once('error', reject)
      tracker.http.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
    })
    return tracker
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port
  }

  get url(): string {
    return `http://${this.options.host ?? '127.0.0.1'}:${this.port}`
  }

  get announceUrl(): string {
    return `${this.url}/announce`
  }

  async close(): Promise<void> {
    this.registry.close()
    this.io.disconnectSockets(true)
    await new Promise<void>((resolve) => this.io.close(() => resolve()))
    await new Promise<void>((resolve) => this.bittorrent.close(() => resolve()))
    this.http.closeAllConnections()
    this.store.close()
  }

  private log(line: string): void {
    this.options.log?.(line)
  }

  private countRejected(event: string, error: WireError): void {
    this.rejected.set(error.code, (this.rejected.get(error.code) ?? 0) + 1)
    this.log(`${event} refused: ${error.code}: ${error.message}`)
  }

  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]
    if (path === '/announce' || path === '/scrape') {
      this.bittorrent.onHttpRequest(req, res, { action: path.slice(1) })
      return
    }
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method === 'GET' && path === '/auth/challenge') json(200, this.issuer.issue())
    else if (req.method === 'GET' && path === '/health') json(200, { ok: true, hosts: this.registry.summaries().filter((h) => h.online).length })
    else json(404, { error: { code: 'not_found', message: `no route ${req.method} ${path}` } })
  }

  /** Every namespace authenticates its connections by signed challenge before any event. */
  private authenticate(namespace: Namespace): void {
    namespace.use((socket, next) => {
      try {
        const { nodeId, publicKey } = this.issuer.verify(namespace.name, socket.handshake.auth)
        const allowed = this.options.allowedKeys
        if (allowed !== undefined && !allowed.includes(publicKey)) {
          throw new NeuronError('not_admitted', `this is a private swarm and key ${publicKey.slice(0, 8)}… is not on its list; ask the operator to add it.`)
        }
        socket.data = { nodeId, publicKey }
        next()
      } catch (error) {
        const e = error instanceof NeuronError ? error : new NeuronError('unauthenticated', String(error))
        this.countRejected(`${namespace.name} connect`, { code: e.code, message: e.message })
        next(Object.assign(new Error(e.message), { data: { code: e.code } }))
      }
    })
  }

  private setUpHosts(namespace: Namespace): void {
    this.authenticate(namespace)
    const handlers: RpcHandlers<typeof HostToTracker, Peer> = {
      'host.hello': ({ profile, state }, peer) => {
        const now = Date.now()
        const known = this.store.getHost(peer.nodeId)
        this.store.upsertHost({ hostId: peer.nodeId, publicKey: peer.publicKey, profile, firstSeen: known?.firstSeen ?? now, lastSeen: now })
        this.registry.hello(peer.nodeId, peer.publicKey, profile, state, now)
        this.hostSockets.set(peer.nodeId, peer.socket)
        return { hostId: peer.nodeId, heartbeatMs: this.registry.heartbeatMs }
      },
      'host.state': (state, peer) => {
        this.requireHello(peer)
        if (state.modelId !== null) {
          const model = this.catalog.get(state.modelId)
          if (state.blocks !== null && state.blocks[1] > model.manifest.nLayer) {
            throw new NeuronError('bad_request', `blocks [${state.blocks[0]}, ${state.blocks[1]}) run past ${state.modelId}'s ${model.manifest.nLayer} blocks.`)
          }
        }
        this.registry.updateState(peer.nodeId, state)
        return {}
      },
      'host.heartbeat': ({ activeSessions }, peer) => {
        this.requireHello(peer)
        this.registry.heartbeat(peer.nodeId, activeSessions)
        return {}
      },
      'placement.request': ({ modelId }, peer) => {
        const host = this.requireHello(peer)
        return this.planner.placement(modelId, host.profile, host.state.msPerBlock, peer.nodeId)
      },
      'model.get': ({ modelId }) => this.modelFiles(modelId),
    }
    namespace.on('connection', (socket) => {
      const peer: Peer = { ...(socket.data as { nodeId: string; publicKey: string }), socket }
      serveRpc(socket, HostToTracker, handlers, peer, (event, error) => this.countRejected(event, error))
      socket.on('disconnect', (reason) => {
        if (this.hostSockets.get(peer.nodeId) === socket) this.hostSockets.delete(peer.nodeId)
        this.registry.markOffline(peer.nodeId, `disconnected (${reason})`)
      })
    })
  }

  private setUpClients(namespace: Namespace): void {
    this.authenticate(namespace)
    const handlers: RpcHandlers<typeof ClientToTracker, Peer> = {
      'models.list': () => ({ models: this.catalog.summaries() }),
      'model.get': ({ modelId }) => this.modelFiles(modelId),
      'model.publish': async ({ manifest, torrent, tokenizer }, peer) => {
        const model = await this.catalog.publish(manifest, torrent, tokenizer, peer.nodeId)
        this.log(`model ${manifest.modelId} published by ${peer.nodeId} (infohash ${model.infoHash})`)
        return { modelId: manifest.modelId, infoHash: model.infoHash }
      },
      'model.tokenizer': ({ modelId }) => ({ tokenizer: this.catalog.get(modelId).tokenizer }),
      'hosts.list': () => ({ hosts: this.registry.summaries() }),
      'route.plan': (request) => this.planner.route(request),
      'placement.preview': ({ modelId, profile }) => this.planner.placement(modelId, profile, null, null),
      'relay.forward': async ({ hostId, frame }) => {
        const socket = this.hostSockets.get(hostId)
        if (socket === undefined || !this.registry.get(hostId)?.online) {
          throw new NeuronError('host_unreachable', `host ${hostId} is not connected to the tracker; ask for a new route.`, { hostId })
        }
        return callRpc(socket, TrackerToHost, 'relay.frame', { frame })
      },
    }
    namespace.on('connection', (socket) => {
      const peer: Peer = { ...(socket.data as { nodeId: string; publicKey: string }), socket }
      serveRpc(socket, ClientToTracker, handlers, peer, (event, error) => this.countRejected(event, error))
    })
  }

  private requireHello(peer: Peer) {
    const host = this.registry.get(peer.nodeId)
    if (host === undefined) throw new NeuronError('no_hello', 'send host.hello with your hardware profile first.')
    return host
  }

  private modelFiles(modelId: string) {
    const model = this.catalog.get(modelId)
    return { manifest: model.manifest, torrent: model.torrent, infoHash: model.infoHash }
  }
}
