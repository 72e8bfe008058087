import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Server as BitTorrentTracker } from 'bittorrent-tracker'
import { type Namespace, type Socket, Server as SocketServer } from 'socket.io'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  HostToTracker,
  MICRO,
  NeuronError,
  type RpcHandlers,
  type RpcSocket,
  serveRpc,
  type WireError,
} from '../protocol'
import { admitSigned, ChallengeIssuer } from './access/auth'
import { Admission } from './access/private-swarm'
import type { Auditor } from './checks/auditor'
import type { HostChecks } from './checks/host-checks'
import { createSwarmChecks } from './checks/swarm-checks'
import { joinCluster, type TrackerCluster } from './cluster/cluster'
import { openTrackerStore } from './db/postgres-store'
import type { TrackerStore } from './db/store'
import { Gateway } from './gateway/gateway'
import { guarded } from './gateway/http'
import { HostRegistry } from './hosts/registry'
import { Accounts } from './ledger/accounts'
import { balanceOfKey } from './ledger/key-balance'
import { Metering, type ReceiptVerdict, wireVerdicts } from './ledger/metering'
import { type PricingOptions, priceOf, pricingFromEnv } from './ledger/pricing'
import { Rent } from './ledger/rent'
import { ModelCatalog } from './models/catalog'
import { Reachability } from './reachability/reachability'
import { TrackerRelay } from './reachability/tracker-relay'
import { VolunteerRelays } from './reachability/volunteer-relays'
import { Reputation } from './reputation/reputation'
import { MeasuredLatencies } from './routing/measured-latencies'
import { SwarmPlanner } from './routing/swarm-planner'
import { joinAccountRoom, pushVerdict } from './rpc/dashboard-push'
import { hostHandlers, modelFiles, type Peer, pricedPlacement } from './rpc/host-rpc'
import { routeHttp } from './rpc/http-routes'
import { recordLatencyReport } from './rpc/latency-rpc'
import { planRoute } from './tickets/route-plan'
import { TicketOffice, ticketOptions } from './tickets/ticket-office'
import { type TrackerOptions, trackerIdentity } from './tracker-options'

export type { TrackerOptions } from './tracker-options'

/**
 * One process, one port: HTTP (challenges, the BitTorrent tracker's /announce and /scrape, each
 * model's public /models/<id> and /models/<id>.torrent), Socket.IO
 * namespaces /hosts and /clients. Every message is parsed with protocol/ schemas; a bad one gets a
 * typed error and the tracker keeps serving.
 */
export class Tracker {
  readonly registry: HostRegistry
  readonly catalog: ModelCatalog
  readonly planner: SwarmPlanner
  /** Hosts that relay for others, and which unreachable host reserves at which. */
  readonly volunteerRelays: VolunteerRelays
  /** Round trips clients measured to hosts; routes follow them. */
  readonly latencies: MeasuredLatencies
  readonly accounts: Accounts
  readonly metering: Metering
  readonly reputation: Reputation
  /** Probes, audits, probation and bans of hosts. */
  readonly checks: HostChecks
  private readonly auditor: Auditor
  /** Whether another host may re-run a hop's blocks: route.plan marks a hop without one unaudited. */
  readonly hasTwin = (modelId: string, blocks: readonly [number, number], hostId: string) =>
    this.auditor.hasTwin(modelId, blocks, hostId)
  readonly gateway: Gateway
  /** Accounts, credit holds and signed tickets for routed sessions. */
  readonly tickets: TicketOffice
  /** The key of the gateway's own SwarmClient: the sessions it routes are paid by the gateway's callers. */
  private readonly gatewayIdentity = NodeIdentity.generate()
  /** Frames for hosts no candidate of which answered the dial-back, counted per host. */
  readonly relay = new TrackerRelay((hostId) =>
    this.registry.get(hostId)?.online ? this.hostSocket(hostId) : undefined,
  )
  /** Malformed or failed requests, counted per code (for tests and the operator). */
  readonly rejected = new Map<string, number>()
  private readonly pricing: PricingOptions
  private readonly issuer: ChallengeIssuer
  /**
   * Who may use this swarm (`admission.admits(key)`, for the data
   * plane's tickets too); `admission.set` changes the list at once.
   */
  readonly admission: Admission
  private readonly hostSockets = new Map<string, Socket>()
  /** route.plan's log of each planned route (`--log-routes`), else none. */
  get logRoute(): ((line: string) => void) | undefined {
    return this.options.logRoutes ? (line) => this.log(line) : undefined
  }
  private readonly http: HttpServer | HttpsServer
  private readonly io: SocketServer
  private readonly bittorrent = new BitTorrentTracker({ http: false, udp: false, ws: false, stats: false })
  private clientNamespace: Namespace | undefined
  /** The gateway's own client of this swarm, connected on first use. */
  private ownClient: Promise<SwarmClient> | undefined

  private constructor(
    readonly store: TrackerStore,
    private readonly options: TrackerOptions,
    /** The tracker's key pair: tickets are signed with it and login challenges name it. */
    readonly identity: NodeIdentity,
    /** The other instances serving this swarm, when there are (tracker/cluster/). */
    private readonly cluster: TrackerCluster | undefined,
  ) {
    this.issuer = new ChallengeIssuer(identity.publicKey, cluster?.nonces)
    this.admission = new Admission(options.allowedKeys, [identity.publicKey, this.gatewayIdentity.publicKey], () => [
      this.io.of('/hosts'),
      this.io.of('/clients'),
    ])
    this.registry = new HostRegistry(options.heartbeatMs ?? 5000)
    this.catalog = new ModelCatalog(store, this.registry)
    const publicKeyOf = async (hostId: string) =>
      this.registry.get(hostId)?.publicKey ?? (await store.getHost(hostId))?.publicKey
    ;({ checks: this.checks, auditor: this.auditor } = createSwarmChecks({
      store,
      registry: this.registry,
      manifest: (modelId) => this.catalog.get(modelId).manifest,
      price: (modelId) => priceOf(this.catalog.get(modelId).manifest, this.pricing),
      probes: (modelId) => this.catalog.probes(modelId),
      tracker: identity,
      client: this.gatewayIdentity,
      hostSocket: (hostId) => this.hostSocket(hostId),
      ca: options.tls?.cert,
      publicKeyOf,
      issue: (session, modelId, hops, routed) => this.metering.issue(session, modelId, hops, null, Date.now(), routed),
      ...(options.checks === undefined ? {} : { options: options.checks }),
      log: (l) => this.log(l),
    }))
    this.reputation = new Reputation(store.reputationHistory, this.registry, this.registry.heartbeatMs, this.checks)
    this.latencies = new MeasuredLatencies(options.latency)
    this.volunteerRelays = new VolunteerRelays(this.registry)
    this.planner = new SwarmPlanner(
      this.registry,
      this.catalog,
      (hostId) => this.reputation.score(hostId),
      this.checks,
      this.latencies,
      this.volunteerRelays,
    )
    this.latencies.on('changed', () => this.planner.invalidate())
    const envGrant = Number(process.env.NEURON_STARTING_GRANT_MICRO)
    this.accounts = new Accounts(
      store,
      options.startingGrantMicro ?? (Number.isSafeInteger(envGrant) && envGrant >= 0 ? envGrant : 10 * MICRO),
    )
    this.pricing = options.gateway?.pricing ?? pricingFromEnv(process.env)
    this.metering = new Metering(
      store.ledger,
      (modelId) => this.catalog.get(modelId).manifest,
      publicKeyOf,
      this.pricing,
      identity.publicKey,
      options,
      (h) => this.checks.banned(h),
    )
    this.metering.on('verdict', (session, verdict, accountId, modelId) =>
      this.onVerdict(session, verdict, accountId, modelId),
    )
    // A host caught lying loses what it earned in the settlement window: its payers get it back.
    this.metering.on('seam', (session, step, message) =>
      this.countRejected(`session ${session} step ${step}`, { code: 'seam_mismatch', message }),
    )
    this.checks.on('verified', () => this.planner.invalidate())
    this.checks.on('banned', (hostId, reason) => {
      this.planner.invalidate()
      this.metering.escrow.voidHost(hostId, reason).then(
        (voided) =>
          this.log(
            `host ${hostId}: ${voided.receipts} pending receipts voided, ${voided.refundedMicro} micro-credits ` +
              `refunded to their payers`,
          ),
        (e: Error) => this.log(`host ${hostId}: voiding its pending receipts failed: ${e.message}`),
      )
    })
    const ticketing = ticketOptions(options, process.env, (k) => this.admission.admits(k))
    const rent = new Rent(
      store.ledger,
      (session) => this.metering.route(session),
      (modelId) => this.catalog.get(modelId).manifest,
      this.pricing,
      // the host's dashboard hears of its rent as of a receipt's pay (step -1: no step); reputation does not count it
      (session, hostId, accountId, modelId, charged) => {
        const ns = this.clientNamespace
        if (ns !== undefined)
          void pushVerdict(
            ns,
            store.ledger,
            session,
            { hostId, step: -1, ok: true, code: 'rent', charged },
            accountId,
            modelId,
            cluster !== undefined,
          ).catch(() => {})
      },
    )
    const shared = cluster === undefined ? {} : { challenges: cluster.nonces, counter: cluster.counter }
    this.tickets = new TicketOffice(
      identity,
      this.accounts,
      this.pricing,
      this.gatewayIdentity.publicKey,
      store.holds,
      { ...ticketing, rent },
      shared,
    )
    const adminToken = options.gateway?.adminToken ?? process.env.NEURON_ADMIN_TOKEN
    this.gateway = new Gateway(
      {
        catalog: this.catalog,
        accounts: this.accounts,
        ledger: store.ledger,
        holds: store.holds,
        apiRequests: store.apiRequests,
        metering: this.metering,
        reputation: this.reputation,
        checks: async (hostId) => {
          await this.checks.load(hostId)
          return this.checks.of(hostId)
        },
        sponsor: (session, accountId) => this.tickets.sponsor(session, accountId),
        admits: (publicKey) => this.admission.admits(publicKey),
        provenKey: async (req, scope) => (await this.issuer.verifyRequest(req, scope))?.publicKey,
        ...(cluster === undefined ? {} : { counter: cluster.counter }),
        client: () => {
          // Pinned to this tracker's key; trusts its own certificate
          // (maybe self-signed); its audits are its callers', uncapped.
          const own = {
            trackerKey: identity.publicKey,
            ca: options.tls?.cert,
            auditsInFlight: Number.POSITIVE_INFINITY,
          }
          this.ownClient ??= SwarmClient.connect(this.url, this.gatewayIdentity, (l) => this.log(`gateway: ${l}`), own)
          return this.ownClient
        },
        log: (l) => this.log(l),
      },
      {
        ...options.gateway,
        pricing: this.pricing,
        ...(adminToken === undefined || adminToken === '' ? {} : { adminToken }),
      },
    )
    this.bittorrent.on('warning', (e: Error) => this.log(`bittorrent: ${e.message}`))
    const onRequest = guarded(
      (req, res) => this.onHttp(req, res),
      (l) => this.log(l),
    )
    this.http = options.tls === undefined ? createServer(onRequest) : createHttpsServer(options.tls, onRequest)
    this.io = new SocketServer(this.http, {
      serveClient: false,
      maxHttpBufferSize: options.maxMessageBytes ?? 64 * 1024 * 1024,
      ...(cluster === undefined ? {} : { adapter: cluster.adapter() }),
    })
    this.metering.shared = cluster !== undefined
    this.setUpHosts(this.io.of('/hosts'))
    this.setUpClients(this.io.of('/clients'))
    this.registry.on('offline', (hostId, why) => {
      this.log(`host ${hostId} offline: ${why}`)
      this.relay.hostGone(hostId, why)
      this.volunteerRelays.forget(hostId)
    })
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
    await this.catalog.load()
    await Promise.all([this.tickets.sweep(), this.checks.loadBanned()])
    this.tickets.start((l) => this.log(l))
    await this.cluster?.attach({ ...this, io: this.io, log: (l) => this.log(l) }, this.registry.heartbeatMs)
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject)
      this.http.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve())
    })
  }

  /** Where the HTTP server (Socket.IO, gateway) is bound: 127.0.0.1 on loopback only, 0.0.0.0 on every interface. */
  address(): AddressInfo {
    return this.http.address() as AddressInfo
  }

  get port(): number {
    return this.address().port
  }

  get url(): string {
    return `${this.options.tls === undefined ? 'http' : 'https'}://${this.options.host ?? '127.0.0.1'}:${this.port}`
  }

  get announceUrl(): string {
    return `${this.url}/announce`
  }

  async close(): Promise<void> {
    this.registry.close()
    this.reputation.close()
    this.checks.close()
    this.metering.close()
    this.tickets.close()
    if (this.ownClient !== undefined) await (await this.ownClient.catch(() => undefined))?.close()
    await this.gateway.close()
    this.io.disconnectSockets(true)
    await new Promise<void>((resolve) => this.io.close(() => resolve()))
    await this.cluster?.close()
    await new Promise<void>((resolve) => this.bittorrent.close(() => resolve()))
    this.http.closeAllConnections()
    await Promise.all([this.reputation.flushed(), this.checks.flushed()])
    await this.store.close()
  }

  /** A host's tracker connection: here, or through the instance that holds it. */
  private hostSocket(hostId: string): RpcSocket | undefined {
    return this.hostSockets.get(hostId) ?? this.cluster?.hostLink(hostId)
  }

  private log(line: string): void {
    this.options.log?.(line)
  }

  private countRejected(event: string, error: WireError): void {
    this.rejected.set(error.code, (this.rejected.get(error.code) ?? 0) + 1)
    this.log(`${event} refused: ${error.code}: ${error.message}`)
  }

  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    const { admission, bittorrent, catalog, gateway, issuer } = this
    routeHttp(
      {
        admission,
        bittorrent,
        catalog,
        gateway,
        issuer,
        onlineHosts: () => this.registry.summaries().filter((h) => h.online).length,
      },
      req,
      res,
    )
  }

  private setUpHosts(namespace: Namespace): void {
    admitSigned(namespace, this.issuer, this.admission, (event, error) => this.countRejected(event, error))
    const { store, registry, catalog, planner, metering, pricing, hostSockets, checks, reputation } = this
    const handlers = hostHandlers({
      store,
      registry,
      catalog,
      planner,
      metering,
      pricing,
      checks,
      reputation,
      trackerKey: this.identity.publicKey,
      hostSockets,
      reachability: new Reachability({ trackerKey: this.identity.publicKey, log: (l) => this.log(l) }),
      volunteerRelays: this.volunteerRelays,
    })
    namespace.on('connection', (socket) => {
      const peer: Peer = { ...(socket.data as { nodeId: string; publicKey: string }), socket }
      serveRpc(socket, HostToTracker, handlers, peer, (event, error) => this.countRejected(event, error))
      socket.on('disconnect', (reason) => {
        // A host that joined again on another connection stays online.
        if (this.hostSockets.get(peer.nodeId) !== socket) return
        this.hostSockets.delete(peer.nodeId)
        this.registry.markOffline(peer.nodeId, `disconnected (${reason})`)
      })
    })
  }

  private setUpClients(namespace: Namespace): void {
    admitSigned(namespace, this.issuer, this.admission, (event, error) => this.countRejected(event, error))
    const handlers: RpcHandlers<typeof ClientToTracker, Peer> = {
      ping: () => ({}),
      'models.list': () => ({ models: this.catalog.summaries() }),
      'model.get': ({ modelId }) => modelFiles(this.catalog, modelId),
      'model.publish': async ({ manifest, torrent, tokenizer, probes }, peer) => {
        const model = await this.catalog.publish(manifest, torrent, tokenizer, peer, probes)
        this.log(`model ${manifest.modelId} published by ${peer.nodeId} (infohash ${model.infoHash})`)
        this.cluster?.changed({ kind: 'catalog', modelId: manifest.modelId })
        return { modelId: manifest.modelId, infoHash: model.infoHash }
      },
      'model.tokenizer': ({ modelId }) => ({ tokenizer: this.catalog.get(modelId).tokenizer }),
      'hosts.list': () => ({
        hosts: this.registry.summaries().map((h) => ({ ...h, relayedBytes: this.relay.bytesFor(h.hostId) })),
      }),
      'route.plan': (request, peer) => planRoute(this, request, peer),
      'grant.challenge': () => this.grantsOrRefuse().challenge(),
      'grant.claim': async (claim, peer) => {
        const claimed = await this.grantsOrRefuse().claim(peer.publicKey, peer.socket.handshake.address, claim)
        // the new account's pushes (balance, receipts) reach this
        // connection from now on, as they would after a reconnect
        joinAccountRoom(peer.socket, Promise.resolve(claimed), (l) => this.log(l))
        return claimed
      },
      'audit.submit': (request, peer) =>
        this.auditor.audit(request, peer, peer.publicKey !== this.gatewayIdentity.publicKey),
      'session.end': ({ session }, peer) => {
        // the hosts stop counting a plan its key ended at once: a plan + end loop holds no slot
        this.planner.ended(session, peer.publicKey)
        return this.tickets.endBy(session, peer.publicKey)
      },
      'account.balance': (_request, peer) => balanceOfKey(this.accounts, this.store.holds, peer.publicKey),
      'latency.report': (report, peer) => ({
        recorded: recordLatencyReport(this.latencies, this.registry, peer.nodeId, report),
      }),
      'placement.preview': ({ modelId, profile }) =>
        pricedPlacement(this.catalog, this.pricing, this.planner.placement(modelId, profile, null, null)),
      // The host binds relayed sessions to the key the tracker authenticated, never to one a frame names.
      'relay.forward': ({ hostId, frame }, peer) => this.relay.forward(hostId, frame, peer.publicKey),
      'receipts.submit': async ({ session, receipts }, peer) => {
        const issuedTo = await this.metering.issuedTo(session)
        if (issuedTo !== undefined && issuedTo !== peer.nodeId) {
          throw new NeuronError(
            'not_your_session',
            `session ${session} was issued to another client; submit receipts for your own sessions.`,
          )
        }
        const account = await this.accounts.byPublicKey(peer.publicKey)
        if (account !== undefined) await this.metering.bind(session, account.accountId)
        return wireVerdicts(await this.metering.settle(session, receipts))
      },
      'dashboard.subscribe': ({ hostIds }, peer) => {
        for (const id of hostIds) void peer.socket.join(`host:${id}`)
        return { hostIds }
      },
    }
    this.clientNamespace = namespace
    namespace.on('connection', (socket) => {
      const peer: Peer = { ...(socket.data as { nodeId: string; publicKey: string }), socket }
      joinAccountRoom(socket, this.accounts.byPublicKey(peer.publicKey), (l) => this.log(l))
      serveRpc(socket, ClientToTracker, handlers, peer, (event, error) => this.countRejected(event, error))
    })
  }

  private grantsOrRefuse(): NonNullable<TicketOffice['grants']> {
    if (this.tickets.grants !== undefined) return this.tickets.grants
    throw new NeuronError(
      'no_grants',
      'this tracker grants new keys nothing; ask the operator for an account (neuron account create).',
    )
  }

  /** Reputation and dashboard pushes follow every settled or refused receipt. */
  private onVerdict(session: string, v: ReceiptVerdict, accountId: string | null, modelId: string | null): void {
    if (v.ok && v.selfServed !== true) this.reputation.completed(v.hostId)
    else if (v.fault === true) {
      this.reputation.failed(v.hostId)
      this.log(`receipt from ${v.hostId} for session ${session} step ${v.step} refused: ${v.code}: ${v.message ?? ''}`)
    }
    if (this.clientNamespace === undefined) return
    pushVerdict(
      this.clientNamespace,
      this.store.ledger,
      session,
      v,
      accountId,
      modelId,
      this.cluster !== undefined,
    ).catch((e: Error) => this.log(`a dashboard push for session ${session} failed: ${e.message}`))
  }
}
