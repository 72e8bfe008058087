import type { Namespace } from 'socket.io'
import { HostToTracker, type RpcHandlers, serveRpc } from '../../protocol'
import { hostRoom } from '../cluster/cluster'
import type { HostMembership } from '../hosts/membership'
import type { HostRegistry } from '../hosts/registry'
import type { Metering } from '../ledger/metering'
import { wireVerdicts } from '../ledger/metering'
import type { PricingOptions } from '../ledger/pricing'
import type { ModelCatalog } from '../models/catalog'
import { pricedPlacement } from '../placement/priced-placement'
import type { TrackerRelay } from '../reachability/tracker-relay'
import type { SwarmPlanner } from '../routing/swarm-planner'
import { type NamespaceDeps, onPeer, type Peer } from './peers'

export interface HostRpcDeps {
  readonly membership: HostMembership
  readonly registry: Pick<HostRegistry, 'heartbeatMs'>
  readonly catalog: ModelCatalog
  readonly planner: Pick<SwarmPlanner, 'placement'>
  readonly metering: Metering
  readonly pricing: PricingOptions
  /** The tracker's key: hosts accept tickets signed by it. */
  readonly identity: { readonly publicKey: string }
  /** Where its STUN server answers (null: none). */
  readonly stunPort: number | null
  /** Carries a host's offer of a punched channel to another host (hop-to-hop seams between homes). */
  readonly relay: Pick<TrackerRelay, 'punch'>
}

/** What hosts may ask the tracker on /hosts: join, say what they serve, be placed, hand in receipts. */
export function hostHandlers(d: HostRpcDeps): RpcHandlers<typeof HostToTracker, Peer> {
  return {
    'host.hello': async ({ profile, state }, peer) => {
      await d.membership.hello(peer, profile, state)
      // Relays and checks reach it here from any tracker instance (tracker/cluster/).
      await peer.socket.join(hostRoom(peer.nodeId))
      return { hostId: peer.nodeId, heartbeatMs: d.registry.heartbeatMs, trackerKey: d.identity.publicKey }
    },
    'host.state': (state, peer) => d.membership.serving(peer, state),
    'host.heartbeat': ({ activeSessions, sessions, idleOpens }, peer) => {
      d.membership.heartbeat(peer, activeSessions, sessions, idleOpens)
      return {}
    },
    'placement.request': ({ modelId }, peer) => {
      const host = d.membership.registered(peer)
      const placement = d.planner.placement(modelId, host.profile, host.state.msPerBlock, peer.nodeId)
      return pricedPlacement(d.catalog, d.pricing, placement)
    },
    'model.get': ({ modelId }) => d.catalog.files(modelId),
    'receipts.submit': async ({ receipts }, peer) =>
      wireVerdicts(await d.metering.settleFromHost(d.membership.registered(peer).hostId, receipts)),
    'stun.port': () => ({ port: d.stunPort }),
    'punch.open': ({ hostId, offer }, peer) => d.relay.punch(hostId, offer, peer.publicKey),
    'relay.receipts': async ({ receipts }, peer) =>
      wireVerdicts(await d.metering.relayFees.settle(d.membership.registered(peer).hostId, receipts)),
  }
}

/** Serves /hosts: signed connections only; a host whose connection closes goes offline. */
export function serveHosts(namespace: Namespace, d: HostRpcDeps & NamespaceDeps): void {
  const handlers = hostHandlers(d)
  onPeer(namespace, d, (peer) => {
    serveRpc(peer.socket, HostToTracker, handlers, peer, d.refused)
    peer.socket.on('disconnect', (reason) => d.membership.disconnected(peer, reason))
  })
}
