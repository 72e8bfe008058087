// The tracker's composition root: every service built once, in the order they need each other, and the events that
// join them wired in one place (`wire`). The listening side (server.ts) and the RPC handlers (rpc/) call these.
import type { Socket, Server as SocketServer } from 'socket.io'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { MICRO, type RpcSocket, type WireError } from '../protocol'
import { ChallengeIssuer } from './access/auth'
import { Admission } from './access/private-swarm'
import type { Auditor } from './checks/auditor'
import type { HostChecks } from './checks/host-checks'
import type { OwnReruns } from './checks/own-reruns'
import { createSwarmChecks } from './checks/swarm-checks'
import type { TrackerCluster } from './cluster/cluster'
import type { TrackerStore } from './db/store'
import { Gateway } from './gateway/gateway'
import { HostMembership } from './hosts/membership'
import { HostRegistry } from './hosts/registry'
import { Accounts } from './ledger/accounts'
import { Metering, type ReceiptVerdict } from './ledger/metering'
import { type PricingOptions, priceOf, pricingFromEnv } from './ledger/pricing'
import { Rent } from './ledger/rent'
import { ModelCatalog } from './models/catalog'
import { Reachability } from './reachability/reachability'
import { TrackerRelay } from './reachability/tracker-relay'
import { VolunteerRelays } from './reachability/volunteer-relays'
import { Reputation } from './reputation/reputation'
import { MeasuredLatencies } from './routing/measured-latencies'
import { SwarmPlanner } from './routing/swarm-planner'
import { pushVerdict } from './rpc/dashboard-push'
import { TicketOffice, ticketOptions } from './tickets/ticket-office'
import type { TrackerOptions } from './tracker-options'

/** What the services are built from: the store, the options, the tracker's key and its listening side. */
export interface ServiceContext {
  readonly store: TrackerStore
  readonly options: TrackerOptions
  /** The tracker's key pair: tickets are signed with it and login challenges name it. */
  readonly identity: NodeIdentity
  /** The other instances serving this swarm, when there are (tracker/cluster/). */
  readonly cluster: TrackerCluster | undefined
  /** Dashboards hear pushes on its /clients; a key taken off a private swarm's list is cut from every namespace. */
  readonly io: SocketServer
  /** Each host's live connection to this instance. */
  readonly hostSockets: Map<string, Socket>
  /** The tracker's own URL once it listens: the gateway's client connects there. */
  readonly url: () => string
}

/** Every service of one tracker instance, built and wired. */
export class TrackerServices {
  readonly store: TrackerStore
  readonly identity: NodeIdentity
  /** The key of the gateway's own SwarmClient: the sessions it routes are paid by the gateway's callers. */
  readonly gatewayIdentity = NodeIdentity.generate()
  readonly issuer: ChallengeIssuer
  /**
   * Who may use this swarm (`admission.admits(key)`, for the data
   * plane's tickets too); `admission.set` changes the list at once.
   */
  readonly admission: Admission
  readonly registry: HostRegistry
  readonly catalog: ModelCatalog
  /** Probes, audits, probation and bans of hosts. */
  readonly checks: HostChecks
  readonly auditor: Auditor
  readonly reputation: Reputation
  /** Round trips clients measured to hosts; routes follow them. */
  readonly latencies: MeasuredLatencies
  /** Where the tracker's STUN server answers (Tracker.listen sets it; null: none), told to hosts and clients. */
  stunPort: number | null = null
  /** Hosts that relay for others, and which unreachable host reserves at which. */
  readonly volunteerRelays: VolunteerRelays
  readonly planner: SwarmPlanner
  readonly accounts: Accounts
  readonly pricing: PricingOptions
  readonly metering: Metering
  /** Accounts, credit holds and signed tickets for routed sessions. */
  readonly tickets: TicketOffice
  readonly gateway: Gateway
  /** Frames for hosts no candidate of which answered the dial-back, counted per host. */
  readonly relay: TrackerRelay
  /** Hosts joining, saying what they serve, heartbeating and leaving. */
  readonly membership: HostMembership
  /** Malformed or failed requests, counted per code (for tests and the operator). */
  readonly rejected = new Map<string, number>()
  /** The gateway's own client of this swarm, connected on first use. */
  private ownClient: Promise<SwarmClient> | undefined

  /** Who may re-run a hop's blocks (other hosts, or the tracker): route.plan marks a hop nobody can unaudited. */
  readonly auditedBy = (modelId: string, blocks: readonly [number, number], hostId: string) =>
    this.auditor.auditedBy(modelId, blocks, hostId)
  /** The spans this tracker re-runs itself for audits (TrackerOptions.ownReruns); undefined when it runs none. */
  readonly ownReruns: OwnReruns | undefined

  readonly log = (line: string): void => {
    this.context.options.log?.(line)
  }

  /** Counts a refused connection, request or step by its code, and logs it. */
  readonly refused = (event: string, error: WireError): void => {
    this.rejected.set(error.code, (this.rejected.get(error.code) ?? 0) + 1)
    this.log(`${event} refused: ${error.code}: ${error.message}`)
  }

  constructor(private readonly context: ServiceContext) {
    const { store, options, identity, cluster, io } = context
    this.store = store
    this.identity = identity
    this.issuer = new ChallengeIssuer(identity.publicKey, cluster?.nonces)
    this.admission = new Admission(options.allowedKeys, [identity.publicKey, this.gatewayIdentity.publicKey], () => [
      io.of('/hosts'),
      io.of('/clients'),
    ])
    this.relay = new TrackerRelay((hostId) => (this.registry.get(hostId)?.online ? this.hostSocket(hostId) : undefined))
    this.registry = new HostRegistry(options.heartbeatMs ?? 5000)
    this.catalog = new ModelCatalog(store, this.registry)
    this.ownReruns = options.ownReruns?.({
      files: (modelId) => this.catalog.files(modelId),
      announceUrl: () => `${context.url()}/announce`,
      trackerKey: identity.publicKey,
      hostId: identity.id,
      log: this.log,
    })
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
      ...(this.ownReruns === undefined ? {} : { own: this.ownReruns }),
      log: this.log,
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
    this.accounts = new Accounts(store, startingGrant(options))
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
    this.metering.shared = cluster !== undefined
    const rent = new Rent(
      store.ledger,
      (session) => this.metering.route(session),
      (modelId) => this.catalog.get(modelId).manifest,
      this.pricing,
      // the host's dashboard hears of its rent as of a receipt's pay (step -1: no step); reputation does not count it
      (session, hostId, accountId, modelId, charged) => {
        const paid: ReceiptVerdict = { hostId, step: -1, ok: true, code: 'rent', charged }
        this.push(session, paid, accountId, modelId).catch(() => {})
      },
    )
    const ticketing = ticketOptions(options, process.env, (k) => this.admission.admits(k))
    const shared = cluster === undefined ? {} : { challenges: cluster.nonces, counter: cluster.counter }
    this.tickets = new TicketOffice(
      identity,
      this.accounts,
      this.pricing,
      this.gatewayIdentity.publicKey,
      store.holds,
      { ...ticketing, rent, keyOf: (hostId) => this.registry.get(hostId)?.publicKey },
      shared,
    )
    this.gateway = this.createGateway()
    this.membership = new HostMembership({
      store,
      registry: this.registry,
      catalog: this.catalog,
      checks: this.checks,
      reputation: this.reputation,
      sockets: context.hostSockets,
      reachability: new Reachability({ trackerKey: identity.publicKey, log: this.log }),
      volunteerRelays: this.volunteerRelays,
    })
    this.wire()
  }

  /** route.plan's log of each planned route (`--log-routes`), else none. */
  get logRoute(): ((line: string) => void) | undefined {
    return this.context.options.logRoutes ? this.log : undefined
  }

  /** A host's tracker connection: here, or through the instance that holds it. */
  hostSocket(hostId: string): RpcSocket | undefined {
    return this.context.hostSockets.get(hostId) ?? this.context.cluster?.hostLink(hostId)
  }

  /** Reads what the store holds before serving (the catalog, banned hosts), sweeps idle holds, starts the sweeper. */
  async load(): Promise<void> {
    await this.catalog.load()
    await Promise.all([this.tickets.sweep(), this.checks.loadBanned()])
    this.tickets.start(this.log)
  }

  /** Stops every service's timers, then the gateway and its own client; the store stays open (`flushed`). */
  async stop(): Promise<void> {
    this.registry.close()
    this.reputation.close()
    this.checks.close()
    this.metering.close()
    this.tickets.close()
    if (this.ownClient !== undefined) await (await this.ownClient.catch(() => undefined))?.close()
    await this.gateway.close()
    await this.ownReruns?.close()
  }

  /** Resolves once reputation and checks have written what they hold: then the store may close. */
  async flushed(): Promise<void> {
    await Promise.all([this.reputation.flushed(), this.checks.flushed()])
  }

  /** How the services hear of each other. */
  private wire(): void {
    const { cluster } = this.context
    this.latencies.on('changed', () => this.planner.invalidate())
    this.catalog.on('published', (model, by) => {
      const modelId = model.manifest.modelId
      this.log(`model ${modelId} published by ${by.nodeId} (infohash ${model.infoHash})`)
      cluster?.changed({ kind: 'catalog', modelId })
    })
    this.metering.on('verdict', (session, verdict, accountId, modelId) =>
      this.onVerdict(session, verdict, accountId, modelId),
    )
    // A host caught lying loses what it earned in the settlement window: its payers get it back.
    this.metering.on('seam', (session, step, message) =>
      this.refused(`session ${session} step ${step}`, { code: 'seam_mismatch', message }),
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
    this.registry.on('offline', (hostId, why) => {
      this.log(`host ${hostId} offline: ${why}`)
      this.relay.hostGone(hostId, why)
      this.volunteerRelays.forget(hostId)
    })
  }

  /** Reputation and dashboard pushes follow every settled or refused receipt. */
  private onVerdict(session: string, v: ReceiptVerdict, accountId: string | null, modelId: string | null): void {
    if (v.ok && v.selfServed !== true) this.reputation.completed(v.hostId)
    else if (v.fault === true) {
      this.reputation.failed(v.hostId)
      this.log(`receipt from ${v.hostId} for session ${session} step ${v.step} refused: ${v.code}: ${v.message ?? ''}`)
    }
    this.push(session, v, accountId, modelId).catch((e: Error) =>
      this.log(`a dashboard push for session ${session} failed: ${e.message}`),
    )
    // each twin's dashboard hears of its standby fee (its host's room only: the payer's hears the step once)
    for (const [twin, share] of v.standby ?? []) {
      const paid: ReceiptVerdict = { hostId: twin, step: v.step, ok: true, code: 'standby', charged: share }
      this.push(session, paid, null, modelId).catch(() => {})
    }
  }

  /** A verdict to the dashboards of its host and its payer's account (rpc/dashboard-push.ts). */
  private push(session: string, v: ReceiptVerdict, accountId: string | null, modelId: string | null): Promise<void> {
    const { io, store, cluster } = this.context
    return pushVerdict(io.of('/clients'), store.ledger, session, v, accountId, modelId, cluster !== undefined)
  }

  private createGateway(): Gateway {
    const { store, options, identity, cluster } = this.context
    const adminToken = options.gateway?.adminToken ?? process.env.NEURON_ADMIN_TOKEN
    return new Gateway(
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
          // its requests start from what earlier ones left on the hosts where their prompts begin alike
          this.ownClient ??= SwarmClient.connect(
            this.context.url(),
            this.gatewayIdentity,
            (l) => this.log(`gateway: ${l}`),
            own,
          ).then((c) => c.reusePrefixes())
          return this.ownClient
        },
        log: this.log,
      },
      {
        ...options.gateway,
        pricing: this.pricing,
        ...(adminToken === undefined || adminToken === '' ? {} : { adminToken }),
      },
    )
  }
}

/** Micro-credits a new account starts with: the option, else $NEURON_STARTING_GRANT_MICRO, else 10 credits. */
function startingGrant(options: TrackerOptions): number {
  const envGrant = Number(process.env.NEURON_STARTING_GRANT_MICRO)
  return options.startingGrantMicro ?? (Number.isSafeInteger(envGrant) && envGrant >= 0 ? envGrant : 10 * MICRO)
}
