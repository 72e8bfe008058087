import { createServer, type Server as HttpServer } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Server as BitTorrentTracker } from 'bittorrent-tracker'
import { type Socket, Server as SocketServer } from 'socket.io'
import type { NodeIdentity } from '../identity/keys'
import type { Admission } from './access/private-swarm'
import type { HostChecks } from './checks/host-checks'
import { joinCluster, type TrackerCluster } from './cluster/cluster'
import { openTrackerStore } from './db/postgres-store'
import type { TrackerStore } from './db/store'
import type { Gateway } from './gateway/gateway'
import { guarded } from './gateway/http'
import type { HostRegistry } from './hosts/registry'
import type { Accounts } from './ledger/accounts'
import type { Metering } from './ledger/metering'
import type { ModelCatalog } from './models/catalog'
import { StunServer } from './reachability/stun-server'
import type { TrackerRelay } from './reachability/tracker-relay'
import type { VolunteerRelays } from './reachability/volunteer-relays'
import type { Reputation } from './reputation/reputation'
import type { MeasuredLatencies } from './routing/measured-latencies'
import type { SwarmPlanner } from './routing/swarm-planner'
import { serveClients } from './rpc/client-rpc'
import { serveHosts } from './rpc/host-rpc'
import { routeHttp } from './rpc/http-routes'
import { TrackerServices } from './services'
import type { TicketOffice } from './tickets/ticket-office'
import { type TrackerOptions, trackerIdentity } from './tracker-options'

export type { TrackerOptions } from './tracker-options'

/**
 * One process, one port: HTTP (challenges, the BitTorrent tracker's /announce and /scrape, each
 * model's public /models/<id> and /models/<id>.torrent), Socket.IO namespaces /hosts and /clients;
 * and, when asked, a STUN server on a UDP port. Every message is parsed with protocol/ schemas; a bad
 * one gets a typed error and the tracker keeps serving. The services it serves are built in services.ts.
 */
export class Tracker {
  /** Every service of this instance, built and wired (services.ts). */
  readonly services: TrackerServices
  private readonly http: HttpServer | HttpsServer
  private readonly io: SocketServer
  private readonly bittorrent = new BitTorrentTracker({ http: false, udp: false, ws: false, stats: false })
  /** Each host's live connection to this instance. */
  private readonly hostSockets = new Map<string, Socket>()
  /** The STUN server beside the HTTP server (options.stunPort), when asked for. */
  private stun: StunServer | undefined

  private constructor(
    store: TrackerStore,
    private readonly options: TrackerOptions,
    identity: NodeIdentity,
    /** The other instances serving this swarm, when there are (tracker/cluster/). */
    private readonly cluster: TrackerCluster | undefined,
  ) {
    const log = (line: string) => options.log?.(line)
    this.bittorrent.on('warning', (e: Error) => log(`bittorrent: ${e.message}`))
    const onRequest = guarded((req, res) => {
      const { admission, catalog, gateway, issuer, registry } = this.services
      const onlineHosts = () => registry.summaries().filter((h) => h.online).length
      routeHttp({ admission, bittorrent: this.bittorrent, catalog, gateway, issuer, onlineHosts }, req, res)
    }, log)
    this.http = options.tls === undefined ? createServer(onRequest) : createHttpsServer(options.tls, onRequest)
    this.io = new SocketServer(this.http, {
      serveClient: false,
      maxHttpBufferSize: options.maxMessageBytes ?? 64 * 1024 * 1024,
      ...(cluster === undefined ? {} : { adapter: cluster.adapter() }),
    })
    const { io, hostSockets } = this
    this.services = new TrackerServices({ store, options, identity, cluster, io, hostSockets, url: () => this.url })
    serveHosts(io.of('/hosts'), this.services)
    serveClients(io.of('/clients'), this.services)
  }

  static async start(options: TrackerOptions): Promise<Tracker> {
    const identity = await trackerIdentity(options)
    const cluster = options.redisUrl === undefined ? undefined : await joinCluster(options.redisUrl, options.dbPath)
    const store = await openTrackerStore(options.dbPath).catch(async (e: unknown) => {
      await cluster?.close()
      throw e
    })
    const tracker = new Tracker(store, options, identity, cluster)
    // A start that fails half way (a port in use, the store unreadable) closes what it opened.
    await tracker.open().catch(async (e: unknown) => {
      await tracker.close().catch(() => undefined)
      throw e
    })
    return tracker
  }

  private async open(): Promise<void> {
    const { registry, checks, catalog, planner, reputation, log } = this.services
    await this.services.load()
    await this.cluster?.attach(
      { io: this.io, registry, checks, catalog, planner, reputation, log },
      registry.heartbeatMs,
    )
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject)
      this.http.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve())
    })
    // every tracker helps its hosts and clients punch through their routers, on a free UDP port unless told one
    const { stunPort = 0 } = this.options
    if (stunPort !== null)
      this.stun = await StunServer.listen(stunPort, this.options.host ?? '127.0.0.1', { log: this.services.log })
    this.services.stunPort = this.stun?.port ?? null
  }

  /** Where the HTTP server (Socket.IO, gateway) is bound: 127.0.0.1 on loopback only, 0.0.0.0 on every interface. */
  address(): AddressInfo {
    return this.http.address() as AddressInfo
  }

  get port(): number {
    return this.address().port
  }

  /** The UDP port its STUN server answers on (on the same host address), or undefined when it runs none. */
  get stunPort(): number | undefined {
    return this.stun?.port
  }

  get url(): string {
    return `${this.options.tls === undefined ? 'http' : 'https'}://${this.options.host ?? '127.0.0.1'}:${this.port}`
  }

  get announceUrl(): string {
    return `${this.url}/announce`
  }

  async close(): Promise<void> {
    await this.stun?.close()
    await this.services.stop()
    this.io.disconnectSockets(true)
    await new Promise<void>((resolve) => this.io.close(() => resolve()))
    await this.cluster?.close()
    await new Promise<void>((resolve) => this.bittorrent.close(() => resolve()))
    this.http.closeAllConnections()
    await this.services.flushed()
    await this.services.store.close()
  }

  // What tests and the app reach on a tracker: its services, by name.
  get store(): TrackerStore {
    return this.services.store
  }
  /** The tracker's key pair: tickets are signed with it and login challenges name it. */
  get identity(): NodeIdentity {
    return this.services.identity
  }
  get registry(): HostRegistry {
    return this.services.registry
  }
  get catalog(): ModelCatalog {
    return this.services.catalog
  }
  get planner(): SwarmPlanner {
    return this.services.planner
  }
  /** Hosts that relay for others, and which unreachable host reserves at which. */
  get volunteerRelays(): VolunteerRelays {
    return this.services.volunteerRelays
  }
  /** Round trips clients measured to hosts; routes follow them. */
  get latencies(): MeasuredLatencies {
    return this.services.latencies
  }
  get accounts(): Accounts {
    return this.services.accounts
  }
  get metering(): Metering {
    return this.services.metering
  }
  get reputation(): Reputation {
    return this.services.reputation
  }
  /** Probes, audits, probation and bans of hosts. */
  get checks(): HostChecks {
    return this.services.checks
  }
  /** Whether another host may re-run a hop's blocks: route.plan marks a hop without one unaudited. */
  get auditedBy(): TrackerServices['auditedBy'] {
    return this.services.auditedBy
  }
  get gateway(): Gateway {
    return this.services.gateway
  }
  /** Accounts, credit holds and signed tickets for routed sessions. */
  get tickets(): TicketOffice {
    return this.services.tickets
  }
  /** Frames for hosts no candidate of which answered the dial-back, counted per host. */
  get relay(): TrackerRelay {
    return this.services.relay
  }
  /** Malformed or failed requests, counted per code (for tests and the operator). */
  get rejected(): Map<string, number> {
    return this.services.rejected
  }
  /**
   * Who may use this swarm (`admission.admits(key)`, for the data
   * plane's tickets too); `admission.set` changes the list at once.
   */
  get admission(): Admission {
    return this.services.admission
  }
  /** route.plan's log of each planned route (`--log-routes`), else none. */
  get logRoute(): ((line: string) => void) | undefined {
    return this.services.logRoute
  }
}
