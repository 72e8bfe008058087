import type { Socket } from 'socket.io'
import {
  cutAllowed,
  DEFAULT_FEE_BPS,
  type HostToTracker,
  NeuronError,
  type PlacementOption,
  type PlacementProposal,
  type RpcHandlers,
  type ServingState,
} from '../../protocol'
import type { HostChecks } from '../checks/host-checks'
import { hostRoom } from '../cluster/cluster'
import type { TrackerStore } from '../db/store'
import type { HostRegistry } from '../hosts/registry'
import { type Metering, wireVerdicts } from '../ledger/metering'
import { hostMicroPerHour, type PricingOptions, priceOf } from '../ledger/pricing'
import type { ModelCatalog } from '../models/catalog'
import type { Reachability } from '../reachability/reachability'
import type { VolunteerRelays } from '../reachability/volunteer-relays'
import type { Reputation } from '../reputation/reputation'
import type { SwarmPlanner } from '../routing/swarm-planner'

/** An authenticated connection on /hosts or /clients. */
export interface Peer {
  readonly nodeId: string
  readonly publicKey: string
  readonly socket: Socket
}

export interface HostRpcDeps {
  readonly store: TrackerStore
  readonly registry: HostRegistry
  readonly catalog: ModelCatalog
  readonly planner: SwarmPlanner
  readonly metering: Metering
  readonly pricing: PricingOptions
  /** The tracker's key: hosts accept tickets signed by it. */
  readonly trackerKey: string
  readonly checks: Pick<HostChecks, 'whenReady' | 'load'>
  readonly reputation: Pick<Reputation, 'load'>
  /** Each host's live connection, for the relay and the tracker's checks. */
  readonly hostSockets: Map<string, Socket>
  /** Dials back a serving host's candidate endpoints: only one that proved the host's key is routed to. */
  readonly reachability: Pick<Reachability, 'prove'>
  /** Volunteer relays: whose offer counts, and where an unreachable host should reserve. */
  readonly volunteerRelays: Pick<VolunteerRelays, 'accept' | 'assign'>
}

/** What hosts may ask the tracker on /hosts: join, say what they serve, be placed, hand in receipts. */
export function hostHandlers(d: HostRpcDeps): RpcHandlers<typeof HostToTracker, Peer> {
  const requireHello = (peer: Peer) => {
    const host = d.registry.get(peer.nodeId)
    if (host === undefined) throw new NeuronError('no_hello', 'send host.hello with your hardware profile first.')
    return host
  }
  /**
   * A served range must lie inside the model and start and end where its manifest allows a cut. A hello may
   * name a model the tracker does not know yet (its host.state is checked once it serves).
   */
  const checkServing = (state: ServingState, hello = false) => {
    if (state.modelId === null || state.blocks === null) return
    if (hello && !d.catalog.has(state.modelId)) return
    const { manifest } = d.catalog.get(state.modelId)
    const [from, to] = state.blocks
    if (to > manifest.nLayer)
      throw new NeuronError(
        'bad_request',
        `blocks [${from}, ${to}) run past ${state.modelId}'s ${manifest.nLayer} blocks.`,
      )
    // or placement would count blocks the host can never be routed for
    if (!cutAllowed(manifest, from) || !cutAllowed(manifest, to)) {
      throw new NeuronError(
        'bad_request',
        `blocks [${from}, ${to}) cut ${state.modelId} where its manifest forbids a cut; serve a range between ` +
          `allowed cuts (the placement preview proposes one).`,
      )
    }
  }
  /** The state as the tracker keeps it: its endpoint the one the dial-back proved, never one the host merely names. */
  const proven = async (state: ServingState, peer: Peer): Promise<ServingState> => {
    const observed = peer.socket.handshake.address
    const kept = await d.reachability.prove({ hostId: peer.nodeId, publicKey: peer.publicKey, observed }, state)
    return d.volunteerRelays.accept(peer.nodeId, kept, observed)
  }
  return {
    'host.hello': async ({ profile, state: said }, peer) => {
      checkServing(said, true)
      const state = await proven(said, peer)
      const now = Date.now()
      const known = await d.store.getHost(peer.nodeId)
      await d.store.upsertHost({
        hostId: peer.nodeId,
        publicKey: peer.publicKey,
        profile,
        firstSeen: known?.firstSeen ?? now,
        lastSeen: now,
      })
      // What the checks and reputation know of it, before it can be routed.
      await Promise.all([d.checks.load(peer.nodeId), d.reputation.load(peer.nodeId)])
      d.registry.hello(peer.nodeId, peer.publicKey, profile, state, now)
      d.hostSockets.set(peer.nodeId, peer.socket)
      // Relays and checks reach it here from any tracker instance (tracker/cluster/).
      await peer.socket.join(hostRoom(peer.nodeId))
      return { hostId: peer.nodeId, heartbeatMs: d.registry.heartbeatMs, trackerKey: d.trackerKey }
    },
    'host.state': async (said, peer) => {
      requireHello(peer)
      checkServing(said)
      const state = await proven(said, peer)
      d.registry.updateState(peer.nodeId, state)
      // Ready is answered once the tracker's probe of what it serves is done: routing starts then.
      await d.checks.whenReady(peer.nodeId)
      return { endpoint: state.endpoint, relay: d.volunteerRelays.assign(peer.nodeId, state) }
    },
    'host.heartbeat': ({ activeSessions, sessions }, peer) => {
      requireHello(peer)
      d.registry.heartbeat(peer.nodeId, activeSessions, Date.now(), null, sessions)
      return {}
    },
    'placement.request': ({ modelId }, peer) => {
      const host = requireHello(peer)
      return pricedPlacement(
        d.catalog,
        d.pricing,
        d.planner.placement(modelId, host.profile, host.state.msPerBlock, peer.nodeId),
      )
    },
    'model.get': ({ modelId }) => modelFiles(d.catalog, modelId),
    'receipts.submit': async ({ receipts }, peer) =>
      wireVerdicts(await d.metering.settleFromHost(requireHello(peer).hostId, receipts)),
    'relay.receipts': async ({ receipts }, peer) =>
      wireVerdicts(await d.metering.relayFees.settle(requireHello(peer).hostId, receipts)),
  }
}

/** A placement with what each option would earn the host at this tracker's price and fee. */
export function pricedPlacement(
  catalog: ModelCatalog,
  pricing: PricingOptions,
  placement: PlacementProposal,
): PlacementProposal {
  const { manifest } = catalog.get(placement.modelId)
  const price = priceOf(manifest, pricing)
  const earn = <T extends PlacementOption>(o: T): T => ({
    ...o,
    hostMicroPerHour: hostMicroPerHour(
      price,
      pricing.feeBps ?? DEFAULT_FEE_BPS,
      manifest.nLayer,
      o.blocks,
      o.expectedTokensPerSecond,
    ),
  })
  return {
    ...placement,
    proposal: placement.proposal === null ? null : earn(placement.proposal),
    alternatives: placement.alternatives.map(earn),
  }
}

/** A model as hosts and clients fetch it: never its probes. */
export function modelFiles(catalog: ModelCatalog, modelId: string) {
  const model = catalog.get(modelId)
  return { manifest: model.manifest, torrent: model.torrent, infoHash: model.infoHash }
}
