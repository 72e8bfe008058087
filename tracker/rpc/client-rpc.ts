import type { Namespace } from 'socket.io'
import { ClientToTracker, type RpcHandlers, serveRpc } from '../../protocol'
import type { Auditor } from '../checks/auditor'
import type { HostRegistry } from '../hosts/registry'
import type { Accounts } from '../ledger/accounts'
import type { CreditHolds } from '../ledger/credit-holds'
import { balanceOfKey } from '../ledger/key-balance'
import type { Metering } from '../ledger/metering'
import type { PricingOptions } from '../ledger/pricing'
import type { ModelCatalog } from '../models/catalog'
import { pricedPlacement } from '../placement/priced-placement'
import type { TrackerRelay } from '../reachability/tracker-relay'
import { recordLatencyReport } from '../routing/latency-reports'
import type { MeasuredLatencies } from '../routing/measured-latencies'
import type { SwarmPlanner } from '../routing/swarm-planner'
import { planRoute, type RoutePlanDeps } from '../tickets/route-plan'
import { routeTurn } from '../tickets/route-turn'
import { settleClientReceipts } from '../tickets/session-receipts'
import type { TicketOffice } from '../tickets/ticket-office'
import { joinAccountRoom, joinHostRooms } from './dashboard-push'
import { type NamespaceDeps, onPeer, type Peer } from './peers'

export interface ClientRpcDeps extends RoutePlanDeps {
  readonly registry: HostRegistry
  readonly catalog: ModelCatalog
  readonly planner: SwarmPlanner
  readonly tickets: TicketOffice
  readonly accounts: Accounts
  readonly metering: Metering
  readonly store: { readonly holds: CreditHolds }
  readonly latencies: MeasuredLatencies
  readonly auditor: Pick<Auditor, 'audit'>
  readonly relay: Pick<TrackerRelay, 'forward' | 'punch' | 'bytesFor'>
  /** Where its STUN server answers (null: none). */
  readonly stunPort: number | null
  readonly pricing: PricingOptions
  /** The gateway's own client's key: its audits are its callers', not limited per key. */
  readonly gatewayIdentity: { readonly publicKey: string }
  readonly log: (line: string) => void
}

/** What clients may ask the tracker on /clients: models, routes and their tickets, grants, receipts, dashboards. */
export function clientHandlers(d: ClientRpcDeps): RpcHandlers<typeof ClientToTracker, Peer> {
  return {
    ping: () => ({}),
    'models.list': () => ({ models: d.catalog.summaries() }),
    'model.get': ({ modelId }) => d.catalog.files(modelId),
    'model.publish': async ({ manifest, torrent, tokenizer, probes }, peer) => {
      const model = await d.catalog.publish(manifest, torrent, tokenizer, peer, probes)
      return { modelId: manifest.modelId, infoHash: model.infoHash }
    },
    'model.tokenizer': ({ modelId }) => ({ tokenizer: d.catalog.get(modelId).tokenizer }),
    'hosts.list': () => ({ hosts: hostsWithRelayedBytes(d.registry, d.relay) }),
    'route.plan': (request, peer) => planRoute(d, request, peer),
    'route.turn': (request, peer) => routeTurn(d, request, peer),
    'grant.challenge': () => d.tickets.grantsOrRefuse().challenge(),
    'grant.claim': async (claim, peer) => {
      const claimed = await d.tickets.grantsOrRefuse().claim(peer.publicKey, peer.socket.handshake.address, claim)
      // the new account's pushes (balance, receipts) reach this
      // connection from now on, as they would after a reconnect
      joinAccountRoom(peer.socket, Promise.resolve(claimed), d.log)
      return claimed
    },
    'audit.submit': (request, peer) => d.auditor.audit(request, peer, peer.publicKey !== d.gatewayIdentity.publicKey),
    'session.end': ({ session }, peer) => {
      // the hosts stop counting a plan its key ended at once: a plan + end loop holds no slot
      d.planner.ended(session, peer.publicKey)
      return d.tickets.endBy(session, peer.publicKey)
    },
    'account.balance': (_request, peer) => balanceOfKey(d.accounts, d.store.holds, peer.publicKey),
    'stun.port': () => ({ port: d.stunPort }),
    'latency.report': (report, peer) => ({
      recorded: recordLatencyReport(d.latencies, d.registry, peer.nodeId, report),
    }),
    'placement.preview': ({ modelId, profile }) =>
      pricedPlacement(d.catalog, d.pricing, d.planner.placement(modelId, profile, null, null)),
    // The host binds relayed sessions to the key the tracker authenticated, never to one a frame names.
    'relay.forward': ({ hostId, frame }, peer) => d.relay.forward(hostId, frame, peer.publicKey),
    'punch.open': ({ hostId, offer }, peer) => d.relay.punch(hostId, offer, peer.publicKey),
    'receipts.submit': ({ session, receipts }, peer) => settleClientReceipts(d, session, receipts, peer),
    'dashboard.subscribe': ({ hostIds }, peer) => joinHostRooms(peer.socket, hostIds),
  }
}

/** Serves /clients: signed connections only, each joined to its account's room for its dashboard's pushes. */
export function serveClients(namespace: Namespace, d: ClientRpcDeps & NamespaceDeps): void {
  const handlers = clientHandlers(d)
  onPeer(namespace, d, (peer) => {
    joinAccountRoom(peer.socket, d.accounts.byPublicKey(peer.publicKey), d.log)
    serveRpc(peer.socket, ClientToTracker, handlers, peer, d.refused)
  })
}

/** Every host the tracker knows, with the bytes it relayed for each (hosts.list). */
function hostsWithRelayedBytes(registry: HostRegistry, relay: Pick<TrackerRelay, 'bytesFor'>) {
  return registry.summaries().map((h) => ({ ...h, relayedBytes: relay.bytesFor(h.hostId) }))
}
