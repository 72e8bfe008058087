import { z } from 'zod'
import { BlockRange } from './blocks'
import { NodeId } from './identity'
import {
  MAX_BLOCKS,
  MAX_HOST_IDS,
  MAX_LATENCY_LINKS,
  MAX_MEASURE_TARGETS,
  MAX_ROUND_TRIP_MS,
  MAX_ROUND_TRIPS_PER_LINK,
  MAX_URL_CHARS,
} from './limits'
import { ModelId } from './manifest'
import { CertFingerprint } from './reachability'
import { RelayVia } from './relays'
import { Seam } from './seams'
import { Ticket } from './tickets'

// The route a tracker plans for a client's session (route.plan), and the round trips clients report for routing.

const Url = z.string().max(MAX_URL_CHARS).url()

export const RouteHop = z.object({
  hostId: NodeId,
  blocks: BlockRange,
  endpoint: Url.nullable(),
  /** The certificate a wss:// endpoint must present (the host's own, signed into its state): the client pins it. */
  fingerprint: CertFingerprint.optional(),
  /** The tracker's signed permission to open this hop (present on every route.plan answer). */
  ticket: Ticket.optional(),
  /**
   * The chance that the client has this hop's session audited once it is over (audit.submit: every step re-run
   * elsewhere as one prefill); absent: none.
   */
  audit: z.number().min(0).max(1).optional(),
  /** What this hop's hidden-state answer carries (the manifest's seam after its last block); absent on the last hop. */
  seamOut: Seam.optional(),
  /** The hop's host is reached through this volunteer relay (its endpoint is null); absent from older trackers. */
  via: RelayVia.optional(),
  /**
   * No other host the tracker trusts serves these blocks: an audit can only have the host re-run a step itself (which
   * catches a host answering the same inputs two ways, not one lying the same way every time) or probe it.
   */
  unaudited: z.literal(true).optional(),
  /**
   * Who re-runs this hop's steps when a session is audited: other hosts of its blocks, or the tracker itself (no other
   * host serves them, and they fit what the tracker runs). Absent where `unaudited`, and from older trackers.
   */
  auditedBy: z.enum(['twins', 'tracker']).optional(),
  /**
   * Twins of this hop's blocks named to stand by for its audits: they share the standby fee, a share of what the
   * session pays this hop, charged when it ends (absent: none, and from older trackers).
   */
  standby: z.number().int().min(1).max(8).optional(),
})
export type RouteHop = z.infer<typeof RouteHop>
export const Route = z.object({
  modelId: ModelId,
  hops: z.array(RouteHop).min(1).max(MAX_BLOCKS),
  expectedMsPerToken: z.number().nonnegative(),
  /**
   * How hidden states cross this model's seams unless a client asks otherwise (`seamDtype` in protocol/seams.ts);
   * absent from older trackers.
   */
  seamDtype: z.enum(['f16', 'f32']).optional(),
  /**
   * Hosts of this model the client has not measured lately: it pings
   * them and reports (latency.report); absent from older trackers.
   */
  measure: z
    .array(z.object({ hostId: NodeId, endpoint: Url, fingerprint: CertFingerprint.optional() }))
    .max(MAX_MEASURE_TARGETS)
    .optional(),
  /**
   * Hosts of this model behind the tracker's relay the client has not measured lately: it pings them by frame through
   * the relay (relay.forward), as their steps would go, and reports the round trips; absent from older trackers.
   */
  measureRelayed: z.array(NodeId).max(MAX_MEASURE_TARGETS).optional(),
  /**
   * A failover plan's tickets for the `rebuild` hops it was asked for, in their order: each reopens its hop to replay.
   */
  rebuildTickets: z.array(Ticket).max(MAX_HOST_IDS).optional(),
})
export type Route = z.infer<typeof Route>

/**
 * A client's WebSocket ping round trips to hosts, ms; the tracker
 * routes this client by them (and the swarm by their median).
 */
export const LatencyReport = z.object({
  links: z
    .array(
      z.object({
        hostId: NodeId,
        roundTripMs: z.array(z.number().min(0).max(MAX_ROUND_TRIP_MS)).min(1).max(MAX_ROUND_TRIPS_PER_LINK),
      }),
    )
    .max(MAX_LATENCY_LINKS),
})
export type LatencyReport = z.infer<typeof LatencyReport>
