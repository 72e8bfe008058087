import { CIRCUIT_PATH, type RelayAssignment, type RelayVia, type ServingState } from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import { addressScope } from './address-scope'

/** A volunteer relay's hop: where clients open the circuit, and the relay's measured round trip to the host, ms. */
export interface RelayedHop {
  readonly via: RelayVia
  readonly relayToHostMs: number | null
}

/**
 * Which hosts relay for others and who reserves where. A host's offer counts only where the tracker proved an endpoint
 * of it that reaches the internet ('public'; on a swarm of one computer, its loopback); an unreachable host is told the
 * relay with the most room, and is routed through it once the relay reports the reservation, while it has a circuit
 * free. The tracker's own relay stays the last resort.
 */
export class VolunteerRelays {
  /** Relays whose offer counts: their proven endpoint and certificate. */
  private readonly relays = new Map<string, { endpoint: string; fingerprint: string | undefined }>()
  /** Unreachable host -> the relay it was told to reserve at. */
  private readonly assigned = new Map<string, string>()

  constructor(private readonly registry: Pick<HostRegistry, 'get'>) {}

  /** The state as kept: its relay offer dropped unless its proven endpoint may carry others' frames. */
  accept(hostId: string, state: ServingState, observed: string): ServingState {
    if (state.relayOffer === undefined) {
      this.relays.delete(hostId)
      return state
    }
    const endpoint = state.endpoint
    const scope = endpoint === null ? undefined : addressScope(new URL(endpoint).hostname)
    const onOneComputer = scope === 'loopback' && addressScope(observed) === 'loopback'
    if (endpoint === null || (scope !== 'public' && !onOneComputer) || state.status !== 'ready') {
      this.relays.delete(hostId)
      const { relayOffer: _, ...rest } = state
      return rest
    }
    this.relays.set(hostId, { endpoint, fingerprint: endpoint.startsWith('wss:') ? state.tls?.fingerprint : undefined })
    return state
  }

  /**
   * Where an unreachable host should reserve: its relay so far
   * while that one still holds it or has room, else the roomiest.
   */
  assign(hostId: string, state: ServingState): RelayAssignment | null {
    if (state.endpoint !== null || state.status !== 'ready') {
      this.assigned.delete(hostId)
      return null
    }
    const current = this.assigned.get(hostId)
    const room = (relayId: string) => {
      const offer = this.registry.get(relayId)?.state.relayOffer
      if (offer === undefined || this.registry.get(relayId)?.online !== true) return -1
      const holds = offer.reserved.some((r) => r.hostId === hostId)
      const promised = [...this.assigned].filter(([h, r]) => r === relayId && h !== hostId).length
      return holds ? offer.circuits : offer.circuits - Math.max(promised, offer.reserved.length)
    }
    let best: string | undefined = current !== undefined && room(current) > 0 ? current : undefined
    if (best === undefined) {
      let bestRoom = 0
      for (const relayId of this.relays.keys()) {
        if (relayId === hostId) continue
        const r = room(relayId)
        if (r > bestRoom) [best, bestRoom] = [relayId, r]
      }
    }
    const relay = best === undefined ? undefined : this.relays.get(best)
    if (best === undefined || relay === undefined) {
      this.assigned.delete(hostId)
      return null
    }
    this.assigned.set(hostId, best)
    return {
      hostId: best,
      endpoint: relay.endpoint,
      ...(relay.fingerprint === undefined ? {} : { fingerprint: relay.fingerprint }),
    }
  }

  /**
   * The volunteer relay a route reaches `hostId` through: only one that reports the reservation and has a circuit free.
   */
  hopOf(hostId: string): RelayedHop | undefined {
    const relayId = this.assigned.get(hostId)
    const relay = relayId === undefined ? undefined : this.relays.get(relayId)
    const live = relayId === undefined ? undefined : this.registry.get(relayId)
    const offer = live?.online === true ? live.state.relayOffer : undefined
    if (relayId === undefined || relay === undefined || offer === undefined || offer.openCircuits >= offer.circuits)
      return undefined
    const reserved = offer.reserved.find((r) => r.hostId === hostId)
    if (reserved === undefined) return undefined
    const via: RelayVia = {
      relayHostId: relayId,
      endpoint: new URL(`${CIRCUIT_PATH}/${hostId}`, relay.endpoint).href,
      ...(relay.fingerprint === undefined ? {} : { fingerprint: relay.fingerprint }),
    }
    return { via, relayToHostMs: reserved.roundTripMs }
  }

  /** A host that left: it relays for nobody, and reserves nowhere. */
  forget(hostId: string): void {
    this.relays.delete(hostId)
    this.assigned.delete(hostId)
  }
}
