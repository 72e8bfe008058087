import {
  allowedCuts,
  type HardwareProfile,
  KV_BUDGET,
  type Manifest,
  MEMORY_SHARE,
  NeuronError,
  type PlacementProposal,
  type Route,
} from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import type { ModelCatalog } from '../models/catalog'
import { previewPlacement } from '../placement/placement'
import { hostsPerRoute } from '../placement/route-size'
import type { VolunteerRelays } from '../reachability/volunteer-relays'
import { RoutePlanner } from './route-planner'
import { type LatencyTable, NO_LATENCIES, type ServedSpan, type SwarmView } from './swarm-view'

/** A compiled route planner is reused for at most this long, so load and reputation stay fresh. */
const PLANNER_MAX_AGE_MS = 1000

/** Turns the live registry into the planners' view, and their answers into protocol messages. */
export class SwarmPlanner {
  constructor(
    private readonly registry: HostRegistry,
    private readonly catalog: ModelCatalog,
    /** Each host's reputation 0..1 (routing uses low scores last); absent, everyone is 1. */
    private readonly reputationOf: (hostId: string) => number = () => 1,
    /** The tracker's checks: whether a host may be routed (verified, not banned) and the speed its probes measured. */
    private readonly checks?: {
      eligible(hostId: string): boolean
      msPerBlock(hostId: string, advertised: number): number
    },
    /**
     * Measured latencies between clients and hosts
     * (tracker/routing/measured-latencies.ts); absent, every link costs the default.
     */
    private readonly latency: LatencyTable = NO_LATENCIES,
    /**
     * Volunteer relays: an unreachable host reserved at one is routed through it, priced by its measured round trips.
     */
    private readonly relays?: Pick<VolunteerRelays, 'hopOf'>,
  ) {
    registry.on('changed', () => this.planners.clear())
  }

  /** Plans from now on see the swarm as it is (a host verified or banned by the checks). */
  invalidate(): void {
    this.planners.clear()
  }

  /**
   * A route was issued (ticketed and metered): its session counts against each host until the host's next
   * heartbeat says how many it runs. Counted once per session and host, and only once the route is paid
   * for: a refused or repeated plan must not make hosts look full to everyone else.
   */
  countRouted(session: string, route: Pick<Route, 'modelId' | 'hops'>, key = ''): void {
    const fresh = route.hops.map((h) => h.hostId).filter((hostId) => this.registry.routed(hostId, session, key))
    if (fresh.length > 0) this.plannerFor(route.modelId).routed(fresh)
  }

  /** `key` ended `session`: its hosts stop counting it at once (their heartbeats count it while they still hold it). */
  ended(session: string, key: string): void {
    if (this.registry.ended(session, key)) this.planners.clear()
  }

  /** One compiled planner per model, rebuilt when a host changes or after a second (load, reputation). */
  private readonly planners = new Map<string, { planner: RoutePlanner; builtAt: number }>()

  private plannerFor(modelId: string): RoutePlanner {
    const cached = this.planners.get(modelId)
    if (cached !== undefined && Date.now() - cached.builtAt < PLANNER_MAX_AGE_MS) return cached.planner
    const planner = new RoutePlanner(this.view(modelId))
    this.planners.set(modelId, { planner, builtAt: Date.now() })
    return planner
  }

  view(modelId: string): SwarmView {
    return this.viewOf(this.catalog.get(modelId).manifest)
  }

  /**
   * The swarm as `key` may have it when every host it needs is full: a full host holding a session opened and never
   * stepped, or where another key holds at least two sessions more than `key`, has one slot for it. The host gives
   * that session up when `key` opens (host/serving/admission.ts squattedSession), so neither opens left idle nor a key
   * keeping more than its share hold a waiting one off.
   */
  private fairShareView(manifest: Manifest, key: string): SwarmView {
    const view = this.viewOf(manifest)
    const spans = view.spans.map((span) => {
      if (span.activeSessions < span.maxSessions) return span
      if ((this.registry.get(span.hostId)?.idleOpens ?? 0) > 0) return { ...span, activeSessions: span.maxSessions - 1 }
      const holders = this.registry.holders(span.hostId)
      const mine = holders.get(key) ?? 0
      let top = 0
      for (const [k, n] of holders) if (k !== key && n > top) top = n
      return top >= mine + 2 ? { ...span, activeSessions: span.maxSessions - 1 } : span
    })
    return { ...view, spans }
  }

  private viewOf(manifest: Manifest): SwarmView {
    const blockBytes = meanBlockBytes(manifest)
    const spans: ServedSpan[] = []
    for (const h of this.registry.serving(manifest.modelId)) {
      const { state } = h
      if (state.blocks === null || state.status === 'idle') continue
      // Neither routing nor placement counts a banned host, or one whose blocks no probe has verified yet.
      const advertised = state.msPerBlock ?? estimateMsPerBlock(blockBytes, h.profile)
      if (this.checks !== undefined && !this.checks.eligible(h.hostId)) continue
      spans.push({
        hostId: h.hostId,
        blocks: state.blocks,
        msPerBlock: this.checks?.msPerBlock(h.hostId, advertised) ?? advertised,
        relay: state.endpoint === null,
        ...this.viaRelay(h.hostId, state.endpoint),
        // a burst of plans between heartbeats must not fill a host past its sessions (it would answer `busy`)
        activeSessions: state.activeSessions + h.routedSinceHeartbeat,
        maxSessions: state.maxSessions,
        kvFreeTokens: state.kvCapacityTokens,
        reputation: this.reputationOf(h.hostId),
        status: state.status,
      })
    }
    return { nBlocks: manifest.nLayer, spans, latency: this.latency, cuts: allowedCuts(manifest) }
  }

  /** Whether clients reach this host through a volunteer relay's circuit (else directly, or by the tracker's relay). */
  behindVolunteerRelay(hostId: string): boolean {
    return this.relays?.hopOf(hostId) !== undefined
  }

  /**
   * An unreachable host's volunteer relay, as the planner prices
   * it: the relay's round trip to the host (else the default's).
   */
  private viaRelay(hostId: string, endpoint: string | null): Pick<ServedSpan, 'viaRelay'> {
    const relayed = endpoint === null ? this.relays?.hopOf(hostId) : undefined
    if (relayed === undefined) return {}
    return { viaRelay: { relayHostId: relayed.via.relayHostId, relayToHostMs: relayed.relayToHostMs } }
  }

  route(request: {
    modelId: string
    maxTokens: number
    exclude: string[]
    span?: readonly [number, number] | undefined
    previousHop?: string | undefined
    nextHop?: string | undefined
    /** The latency id of the client that relays the route's hops (clientLatencyId). */
    relayedBy?: string | undefined
    /** The asking client's key: when the swarm is full for it, it gets a share of hosts other keys hold more of. */
    clientKey?: string | undefined
  }): Route {
    const ask = {
      tokens: request.maxTokens,
      exclude: new Set(request.exclude),
      ...(request.span === undefined ? {} : { span: request.span }),
      ...(request.previousHop === undefined ? {} : { previousHop: request.previousHop }),
      ...(request.nextHop === undefined ? {} : { nextHop: request.nextHop }),
      ...(request.relayedBy === undefined ? {} : { relayedBy: request.relayedBy }),
    }
    let planned: ReturnType<RoutePlanner['plan']>
    try {
      planned = this.plannerFor(request.modelId).plan(ask)
    } catch (error) {
      if (!(error instanceof NeuronError) || error.code !== 'no_route' || request.clientKey === undefined) throw error
      planned = new RoutePlanner(
        this.fairShareView(this.catalog.get(request.modelId).manifest, request.clientKey),
      ).plan(ask)
    }
    return {
      modelId: request.modelId,
      expectedMsPerToken: planned.expectedMsPerToken,
      hops: this.reached(planned.hops),
    }
  }

  /**
   * Prefix affinity: `hops` as the route, when they still cover the whole model in order and each host can take a
   * session of `maxTokens` now (serving those blocks, ready, eligible, not excluded, below its session count with the
   * sessions routed since its heartbeat, and with that much KV free). A host that is full or gone loses the affinity:
   * undefined, and the caller plans as usual (the prefix is prefilled again elsewhere).
   */
  affine(
    modelId: string,
    hops: readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[],
    maxTokens: number,
    exclude: readonly string[] = [],
  ): Route | undefined {
    const view = this.viewOf(this.catalog.get(modelId).manifest)
    let at = 0
    let ms = 0
    for (const hop of hops) {
      const span = view.spans.find((s) => s.hostId === hop.hostId)
      if (
        span === undefined ||
        exclude.includes(hop.hostId) ||
        hop.blocks[0] !== at ||
        hop.blocks[0] < span.blocks[0] ||
        hop.blocks[1] > span.blocks[1] ||
        span.status !== 'ready' ||
        span.activeSessions >= span.maxSessions ||
        span.kvFreeTokens < maxTokens
      )
        return undefined
      at = hop.blocks[1]
      ms += span.msPerBlock * (hop.blocks[1] - hop.blocks[0])
    }
    if (at !== view.nBlocks) return undefined
    try {
      return { modelId, expectedMsPerToken: ms, hops: this.reached(hops) }
    } catch {
      return undefined
    }
  }

  /** Each hop with how the client reaches it: its endpoint (and certificate), or the volunteer relay it sits behind. */
  private reached(hops: readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[]) {
    return hops.map((hop) => {
      const host = this.registry.get(hop.hostId)
      if (host === undefined)
        throw new NeuronError('no_route', `host ${hop.hostId} left while the route was planned; ask again.`)
      const { endpoint, tls } = host.state
      const relayed = endpoint === null ? this.relays?.hopOf(hop.hostId) : undefined
      return {
        hostId: hop.hostId,
        blocks: [hop.blocks[0], hop.blocks[1]] as [number, number],
        endpoint,
        ...(endpoint?.startsWith('wss:') && tls !== undefined ? { fingerprint: tls.fingerprint } : {}),
        ...(relayed === undefined ? {} : { via: relayed.via }),
      }
    })
  }

  /** A placement preview for a host with this profile; `hostId` set when the host already serves. */
  placement(
    modelId: string,
    profile: HardwareProfile,
    msPerBlock: number | null,
    hostId: string | null,
  ): PlacementProposal {
    const model = this.catalog.get(modelId).manifest
    const vram = profile.gpus.reduce((s, g) => s + g.vramBytes, 0)
    const freeMemoryBytes = Math.floor(MEMORY_SHARE * (vram > 0 ? vram : profile.memory.availableBytes))
    const preview = previewPlacement(
      this.viewOf(model),
      model,
      {
        ...(hostId === null ? {} : { hostId }),
        freeMemoryBytes,
        freeDiskBytes: profile.disk.freeBytes,
        msPerBlock: msPerBlock ?? estimateMsPerBlock(meanBlockBytes(model), profile),
        relay: false,
      },
      // every block gets a second host before throughput decides, so each span has another host to audit it
      { kvBudgetTokens: KV_BUDGET.tokens, kvBudgetSessions: KV_BUDGET.sessions, twins: true },
    )
    const d = preview.decision
    return {
      modelId,
      proposal: d.serve ? d.proposal : null,
      refusal: d.serve ? null : { code: d.code, reason: d.reason, ...neededOf(d.details) },
      swarmTokensPerSecond: preview.swarmTokensPerSecond,
      coverage: preview.coverage,
      alternatives: preview.alternatives,
      hostsPerRoute: hostsPerRoute(model, freeMemoryBytes, KV_BUDGET)?.length ?? null,
    }
  }
}

/**
 * Fixed cost of running one block for one token, whatever its size: graph building, ~15 ggml ops and
 * thread syncs. stories260K measures 0.1–0.2 ms per block (2-core EPYC, 1 thread) where its bytes over
 * bandwidth predict 0.005 ms; for a 70B block (~0.5 GB) it is noise.
 */
const BLOCK_OVERHEAD_MS = 0.1

function meanBlockBytes(manifest: Pick<Manifest, 'bytesPerBlock' | 'nLayer'>): number {
  return manifest.bytesPerBlock.reduce((s, b) => s + b, 0) / manifest.nLayer
}

/**
 * Before a host has measured a model, decode time per block is
 * about its bytes over memory bandwidth, plus the fixed cost.
 */
function estimateMsPerBlock(blockBytes: number, profile: HardwareProfile): number {
  return BLOCK_OVERHEAD_MS + (1000 * blockBytes) / Math.max(1, profile.memoryBytesPerSecond)
}

function neededOf(details: Record<string, unknown>): { neededBytes?: number } {
  return typeof details.neededBytes === 'number' ? { neededBytes: details.neededBytes } : {}
}
