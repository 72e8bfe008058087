import type { Socket } from 'socket.io'
import { cutAllowed, type HardwareProfile, NeuronError, type RelayAssignment, type ServingState } from '../../protocol'
import type { HostChecks } from '../checks/host-checks'
import type { TrackerStore } from '../db/store'
import type { ModelCatalog } from '../models/catalog'
import type { Reachability } from '../reachability/reachability'
import type { VolunteerRelays } from '../reachability/volunteer-relays'
import type { Reputation } from '../reputation/reputation'
import type { HostRegistry, LiveHost } from './registry'

/** A host's authenticated connection on /hosts. */
export interface HostPeer {
  readonly nodeId: string
  readonly publicKey: string
  readonly socket: Socket
}

export interface MembershipDeps {
  readonly store: Pick<TrackerStore, 'getHost' | 'upsertHost'>
  readonly registry: HostRegistry
  readonly catalog: Pick<ModelCatalog, 'has' | 'get'>
  readonly checks: Pick<HostChecks, 'whenReady' | 'load'>
  readonly reputation: Pick<Reputation, 'load'>
  /** Each host's live connection, for the relay and the tracker's checks. */
  readonly sockets: Map<string, Socket>
  /** Dials back a serving host's candidate endpoints: only one that proved the host's key is routed to. */
  readonly reachability: Pick<Reachability, 'prove'>
  /** Volunteer relays: whose offer counts, and where an unreachable host should reserve. */
  readonly volunteerRelays: Pick<VolunteerRelays, 'accept' | 'assign'>
}

/**
 * Hosts joining and staying: a hello registers a host (kept in the store, its checks and reputation read, its
 * connection kept), a state says what it serves (checked against the model's cuts, its endpoint proven by a
 * dial-back), heartbeats keep it online, and its connection closing takes it offline.
 */
export class HostMembership {
  constructor(private readonly d: MembershipDeps) {}

  /** The host as its hello registered it; `no_hello` before one. */
  registered(peer: HostPeer): LiveHost {
    const host = this.d.registry.get(peer.nodeId)
    if (host === undefined) throw new NeuronError('no_hello', 'send host.hello with your hardware profile first.')
    return host
  }

  async hello(peer: HostPeer, profile: HardwareProfile, said: ServingState): Promise<void> {
    this.checkServing(said, true)
    const state = await this.proven(said, peer)
    const now = Date.now()
    const known = await this.d.store.getHost(peer.nodeId)
    await this.d.store.upsertHost({
      hostId: peer.nodeId,
      publicKey: peer.publicKey,
      profile,
      firstSeen: known?.firstSeen ?? now,
      lastSeen: now,
    })
    // What the checks and reputation know of it, before it can be routed.
    await Promise.all([this.d.checks.load(peer.nodeId), this.d.reputation.load(peer.nodeId)])
    this.d.registry.hello(peer.nodeId, peer.publicKey, profile, state, now)
    this.d.sockets.set(peer.nodeId, peer.socket)
  }

  /** What the host serves now: its endpoint as proven, and the volunteer relay it should reserve at, if any. */
  async serving(
    peer: HostPeer,
    said: ServingState,
  ): Promise<{ endpoint: string | null; relay: RelayAssignment | null }> {
    this.registered(peer)
    this.checkServing(said)
    const state = await this.proven(said, peer)
    this.d.registry.updateState(peer.nodeId, state)
    // Ready is answered once the tracker's probe of what it serves is done: routing starts then.
    await this.d.checks.whenReady(peer.nodeId)
    return { endpoint: state.endpoint, relay: this.d.volunteerRelays.assign(peer.nodeId, state) }
  }

  heartbeat(peer: HostPeer, activeSessions: number, sessions?: readonly string[], idleOpens = 0): void {
    this.registered(peer)
    this.d.registry.heartbeat(peer.nodeId, activeSessions, Date.now(), null, sessions, idleOpens)
  }

  /** The host's connection closed: it goes offline, unless it joined again on another connection. */
  disconnected(peer: HostPeer, reason: string): void {
    if (this.d.sockets.get(peer.nodeId) !== peer.socket) return
    this.d.sockets.delete(peer.nodeId)
    this.d.registry.markOffline(peer.nodeId, `disconnected (${reason})`)
  }

  /**
   * A served range must lie inside the model and start and end where its manifest allows a cut. A hello may
   * name a model the tracker does not know yet (its host.state is checked once it serves).
   */
  private checkServing(state: ServingState, hello = false): void {
    if (state.modelId === null || state.blocks === null) return
    if (hello && !this.d.catalog.has(state.modelId)) return
    const { manifest } = this.d.catalog.get(state.modelId)
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
  private async proven(state: ServingState, peer: HostPeer): Promise<ServingState> {
    const observed = peer.socket.handshake.address
    const kept = await this.d.reachability.prove({ hostId: peer.nodeId, publicKey: peer.publicKey, observed }, state)
    return this.d.volunteerRelays.accept(peer.nodeId, kept, observed)
  }
}
