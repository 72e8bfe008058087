import { z } from 'zod'
import { BlockRange } from './blocks'
import { AuditRequest, AuditVerdict } from './checks'
import { GrantChallenge, GrantClaim, GrantClaimed } from './grants'
import { NodeId, PublicKey } from './identity'
import {
  MAX_BLOCKS,
  MAX_CPU_FLAGS,
  MAX_GPUS,
  MAX_HEARTBEAT_SESSIONS,
  MAX_HOST_IDS,
  MAX_LABEL_CHARS,
  MAX_LATENCY_LINKS,
  MAX_LISTED,
  MAX_MEASURE_TARGETS,
  MAX_MESSAGE_CHARS,
  MAX_PATH_CHARS,
  MAX_RECEIPTS,
  MAX_ROUND_TRIP_MS,
  MAX_ROUND_TRIPS_PER_LINK,
  MAX_SESSION_TOKENS,
  MAX_TOKENIZER_BYTES,
  MAX_TORRENT_BYTES,
  MAX_URL_CHARS,
} from './limits'
import { Count, Manifest, ModelId } from './manifest'
import { ProbeSetBytes } from './probe-codec'
import { CertFingerprint, MAX_CANDIDATES } from './reachability'
import { RelayAssignment, RelayOffer, RelayVia } from './relays'
import { rpc } from './rpc'
import { Seam } from './seams'
import { Ticket } from './tickets'

/** Raw bytes: Socket.IO carries Buffers as binary attachments. */
export const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected binary data')
/** Raw bytes, at most `max` of them. */
const BytesUpTo = (max: number) => Bytes.refine((b) => b.byteLength <= max, `at most ${max} bytes`)
const Label = z.string().max(MAX_LABEL_CHARS)
const Url = z.string().max(MAX_URL_CHARS).url()
const InfoHash = z.string().regex(/^[0-9a-f]{40}$/)

export const HardwareProfile = z.object({
  cpu: z.object({ model: Label, cores: Count, physicalCores: Count, flags: z.array(Label).max(MAX_CPU_FLAGS) }),
  memory: z.object({ totalBytes: Count, availableBytes: Count }),
  gpus: z.array(z.object({ vendor: Label, model: Label, vramBytes: Count })).max(MAX_GPUS),
  disk: z.object({ path: z.string().max(MAX_PATH_CHARS), freeBytes: Count, readBytesPerSecond: Count }),
  /** Measured memory copy bandwidth: decoding is memory-bound, so it predicts time per block before loading. */
  memoryBytesPerSecond: Count,
  /** Threads the host gives its runtime. */
  threads: z.number().int().positive(),
})
export type HardwareProfile = z.infer<typeof HardwareProfile>

export const HostStatus = z.enum(['idle', 'downloading', 'loading', 'ready', 'draining'])
export type HostStatus = z.infer<typeof HostStatus>

/** The least ms per block a host may claim (1 ns): faster than any hardware, and far from float underflow. */
export const MIN_MS_PER_BLOCK = 1e-6

export const ServingState = z.object({
  modelId: ModelId.nullable(),
  blocks: BlockRange.nullable(),
  status: HostStatus,
  /** Download or load progress, 0..1. */
  progress: z.number().min(0).max(1),
  kvCapacityTokens: Count,
  activeSessions: Count,
  maxSessions: Count,
  /**
   * Measured compute time per block per decoded token, ms; null until measured. At least a nanosecond: a smaller claim
   * (a denormal, say) makes the throughput placement computes from it infinite.
   */
  msPerBlock: z.number().min(MIN_MS_PER_BLOCK).nullable(),
  /**
   * The data-plane WebSocket address, or null when the host is reached through the tracker's relay. The tracker keeps
   * the one it proved by dialing back (a candidate, or the endpoint a host names), never one a host merely says.
   */
  endpoint: Url.nullable(),
  /** Where the host may be reached: its interfaces and a port mapped on its router (absent from older hosts). */
  candidates: z.array(Url).max(MAX_CANDIDATES).optional(),
  /**
   * Its data-plane certificate's fingerprint, which clients pin, and the host's signature of it (certificateMessage).
   */
  tls: z.object({ fingerprint: CertFingerprint, signature: Label }).optional(),
  /**
   * This host relays for others (--relay-for-others): its bounds and
   * load; the tracker uses it only where it proved a public endpoint.
   */
  relayOffer: RelayOffer.optional(),
})
export type ServingState = z.infer<typeof ServingState>

export const IDLE_STATE: ServingState = {
  modelId: null,
  blocks: null,
  status: 'idle',
  progress: 0,
  kvCapacityTokens: 0,
  activeSessions: 0,
  maxSessions: 0,
  msPerBlock: null,
  endpoint: null,
}

export const ModelSummary = z.object({
  modelId: ModelId,
  name: Label,
  architecture: Label,
  nLayer: z.number().int().positive(),
  bytes: Count,
  infoHash: InfoHash,
  /** Ready hosts serving each block. */
  coverage: z.array(Count).max(MAX_BLOCKS),
})
export type ModelSummary = z.infer<typeof ModelSummary>

export const HostSummary = z.object({
  hostId: NodeId,
  online: z.boolean(),
  profile: HardwareProfile,
  state: ServingState,
  lastSeen: z.number(),
  /** Data-plane bytes the tracker's relay carried to and from this host (absent from older trackers). */
  relayedBytes: Count.optional(),
})
export type HostSummary = z.infer<typeof HostSummary>

export const RouteHop = z.object({
  hostId: NodeId,
  blocks: BlockRange,
  endpoint: Url.nullable(),
  /** The certificate a wss:// endpoint must present (the host's own, signed into its state): the client pins it. */
  fingerprint: CertFingerprint.optional(),
  /** The tracker's signed permission to open this hop (present on every route.plan answer). */
  ticket: Ticket.optional(),
  /** Fraction of this hop's steps the client should have the tracker re-run elsewhere (audit.submit); absent: none. */
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

const PlacementOption = z.object({
  blocks: BlockRange,
  bytesToDownload: Count,
  memoryBytes: Count,
  /** Of memoryBytes, the cache of the range's blocks at the host's KV budget (absent from older trackers). */
  cacheBytes: Count.optional(),
  /**
   * Cache bytes one token adds across the range's blocks, each
   * block's cost from the manifest (absent from older trackers).
   */
  cacheBytesPerToken: Count.optional(),
  /** The range's cache for one 128K-token session (LONG_CONTEXT), fixed state included (absent from older trackers). */
  longContextCacheBytes: Count.optional(),
  /**
   * The tokens of that session: 128K, or the model's context length when shorter (absent from older trackers: 128K).
   */
  longContextTokens: Count.optional(),
  /**
   * Bytes one token brings into the range and sends out of it
   * across its inner seams, at f16 (absent from older trackers).
   */
  seamBytesPerToken: Count.optional(),
  /** What this host adds to each block of its range, tokens/s. */
  expectedTokensPerSecond: z.number().nonnegative(),
  /** The swarm's weakest block once this host serves the range, tokens/s. */
  swarmTokensPerSecond: z.number().nonnegative(),
  /** The fastest route through this host on this range, ms per token; null while no complete route exists. */
  bestRouteMsPerToken: z.number().nonnegative().nullable(),
  /**
   * What this range would earn the host in an hour at
   * `expectedTokensPerSecond`, micro-credits, at the tracker's price and fee.
   */
  hostMicroPerHour: Count.optional(),
})
export type PlacementOption = z.infer<typeof PlacementOption>
const Served = z.object({ tokensPerSecond: z.number().nonnegative(), hosts: Count })
export const PlacementProposal = z.object({
  modelId: ModelId,
  /** null when this host should not serve this model; `refusal` says why. */
  proposal: PlacementOption.nullable(),
  /**
   * `neededBytes`: what the smallest range needs of the resource refused (memory or disk), absent from older trackers.
   */
  refusal: z
    .object({ code: Label, reason: z.string().max(MAX_MESSAGE_CHARS), neededBytes: Count.optional() })
    .nullable(),
  /** The swarm's weakest block today, tokens/s (0 while a block is not served). */
  swarmTokensPerSecond: z.number().nonnegative(),
  coverage: z.array(z.object({ block: Count, before: Served, after: Served })).max(MAX_BLOCKS),
  alternatives: z.array(PlacementOption.extend({ why: z.string().max(MAX_MESSAGE_CHARS) })).max(MAX_BLOCKS),
  /**
   * Hosts with this one's usable memory that one route through the model
   * needs; null when a block fits none (absent from older trackers).
   */
  hostsPerRoute: Count.nullable().optional(),
})
export type PlacementProposal = z.infer<typeof PlacementProposal>

const Empty = z.object({}).strict()
const SessionId = z.string().regex(/^[0-9a-f]{32}$/)

/** The tracker's verdict on each receipt handed in: settled (`charged` micro-credits) or refused (`code`). */
const ReceiptVerdicts = z.object({
  verdicts: z
    .array(z.object({ hostId: Label, step: z.number(), ok: z.boolean(), code: Label.optional(), charged: Count }))
    .max(MAX_RECEIPTS),
})

/** Events a host sends the tracker on the /hosts namespace. */
export const HostToTracker = {
  /** `trackerKey`: the key that signs the tickets this host must check on every open. */
  'host.hello': rpc(
    z.object({ profile: HardwareProfile, state: ServingState }),
    z.object({ hostId: NodeId, heartbeatMs: z.number().int().positive(), trackerKey: PublicKey }),
  ),
  /** Answered with the endpoint the tracker proved by dialing back (null: relayed); absent from older trackers. */
  /**
   * `relay`: where a host no candidate of which answered should
   * keep a reservation (null: none; absent: older trackers).
   */
  'host.state': rpc(
    ServingState,
    z.object({ endpoint: Url.nullable().optional(), relay: RelayAssignment.nullable().optional() }),
  ),
  /**
   * `sessions`: the ticketed sessions open now or opened since the last heartbeat, so the tracker stops counting those
   * it routed here only once the host's count holds them (absent from older hosts, and past MAX_HEARTBEAT_SESSIONS).
   */
  'host.heartbeat': rpc(
    z.object({ activeSessions: Count, sessions: z.array(SessionId).max(MAX_HEARTBEAT_SESSIONS).optional() }),
    Empty,
  ),
  'placement.request': rpc(z.object({ modelId: ModelId }), PlacementProposal),
  'model.get': rpc(
    z.object({ modelId: ModelId }),
    z.object({ manifest: Manifest, torrent: BytesUpTo(MAX_TORRENT_BYTES), infoHash: InfoHash }),
  ),
  /** A host hands in its own signed receipts, in batches: its sessions are paid even when their client vanishes. */
  'receipts.submit': rpc(z.object({ receipts: z.array(z.unknown()).max(MAX_RECEIPTS) }), ReceiptVerdicts),
  /** A volunteer relay hands in its signed receipts for the frames it carried (RelayReceipt). */
  'relay.receipts': rpc(z.object({ receipts: z.array(z.unknown()).max(MAX_RECEIPTS) }), ReceiptVerdicts),
}

/** Events the tracker sends a host: frames relayed for hosts that accept no connections. */
export const TrackerToHost = {
  /** `from`: the public key of the client the tracker relays for (it authenticated it). */
  'relay.frame': rpc(z.object({ frame: Bytes, from: PublicKey }), z.object({ frame: Bytes })),
}

/**
 * A key pair's account as `account.balance` answers it, micro-credits: free to spend is balanceMicro less heldMicro.
 */
export const AccountBalance = z.object({
  accountId: z.string().min(1).max(64),
  balanceMicro: z.number().int(),
  heldMicro: z.number().int().nonnegative(),
})
export type AccountBalance = z.infer<typeof AccountBalance>

/** Events an app or client sends the tracker on the /clients namespace. */
export const ClientToTracker = {
  /** A heartbeat: an app tells a dead tracker from a quiet one within seconds (Socket.IO's own ping takes 45 s). */
  ping: rpc(Empty, Empty),
  'models.list': rpc(Empty, z.object({ models: z.array(ModelSummary).max(MAX_LISTED) })),
  'model.get': HostToTracker['model.get'],
  /** `tokenizer`: the model's metadata-only GGUF (vocabulary, chat template), for clients. */
  'model.publish': rpc(
    // probes: the publisher's secret known-answer probes (encodeProbeSet), kept by the tracker and never handed out
    z.object({
      manifest: Manifest,
      torrent: BytesUpTo(MAX_TORRENT_BYTES),
      tokenizer: BytesUpTo(MAX_TOKENIZER_BYTES),
      probes: ProbeSetBytes.optional(),
    }),
    z.object({ modelId: ModelId, infoHash: InfoHash }),
  ),
  'model.tokenizer': rpc(z.object({ modelId: ModelId }), z.object({ tokenizer: BytesUpTo(MAX_TOKENIZER_BYTES) })),
  'hosts.list': rpc(Empty, z.object({ hosts: z.array(HostSummary).max(MAX_LISTED) })),
  'route.plan': rpc(
    z.object({
      modelId: ModelId,
      maxTokens: z.number().int().positive().max(MAX_SESSION_TOKENS),
      /** Hosts not to use (e.g. one that just failed). */
      exclude: z.array(NodeId).max(MAX_HOST_IDS).default([]),
      /** Plan only these blocks (failover of one span); default the whole model. */
      span: BlockRange.optional(),
      /** With `span`: the hosts before and after it on the route, so their links count. */
      previousHop: NodeId.optional(),
      nextHop: NodeId.optional(),
      /**
       * With `span`: the host that just failed it (counted against its reputation). Makes this a failover plan: its
       * tickets allow replay numbering (the ticket's `replay` says the span and who pays).
       */
      failedHost: NodeId.optional(),
      /**
       * With `failedHost`: hops already on this session's route whose caches
       * must be rebuilt too (after a liar); each gets a failover ticket.
       */
      rebuild: z
        .array(z.object({ hostId: NodeId, blocks: BlockRange }))
        .max(MAX_HOST_IDS)
        .optional(),
      /**
       * The session the route is for: its tickets name it, its hold pays for it, its receipts are checked against it.
       */
      session: SessionId,
      /** Of `maxTokens`, how many are the prompt (priced as prompt tokens); default none. */
      promptTokens: z.number().int().nonnegative().max(MAX_SESSION_TOKENS).optional(),
    }),
    Route,
  ),
  'placement.preview': rpc(z.object({ modelId: ModelId, profile: HardwareProfile }), PlacementProposal),
  'relay.forward': rpc(z.object({ hostId: NodeId, frame: Bytes }), z.object({ frame: Bytes })),
  /** An app's SwarmClient hands in its session's signed receipts; its key pair's account pays. */
  'receipts.submit': rpc(
    z.object({ session: SessionId, receipts: z.array(z.unknown()).max(MAX_RECEIPTS) }),
    ReceiptVerdicts,
  ),
  /** The client is done with a session: the tracker releases what is left of its credit hold. */
  'session.end': rpc(z.object({ session: SessionId }), Empty),
  /** Round trips the client measured; `recorded`: the links kept (hosts the tracker does not know are dropped). */
  'latency.report': rpc(LatencyReport, z.object({ recorded: Count })),
  /**
   * A single-use puzzle whose answer opens a new key's account with the tracker's grant (refused where there is none).
   */
  'grant.challenge': rpc(Empty, GrantChallenge),
  /** The answer: the key's account opens with the grant, within its network prefix's daily bound. */
  'grant.claim': rpc(GrantClaim, GrantClaimed),
  /**
   * The balance of the account this connection's key pair pays from, and how much of it sessions in flight hold; no
   * request field names a key (the tracker answers the key it authenticated), so no key can read another's.
   * unknown_account without one.
   */
  'account.balance': rpc(Empty, AccountBalance),
  /** Has the tracker re-run one hop's step on another host and compare (see AuditRequest); rate-limited per key. */
  'audit.submit': rpc(AuditRequest, AuditVerdict),
  /** Join the dashboard pushes of these hosts (your own account's come without asking). */
  'dashboard.subscribe': rpc(
    z.object({ hostIds: z.array(NodeId).max(64) }),
    z.object({ hostIds: z.array(NodeId).max(MAX_HOST_IDS) }),
  ),
}

/** Pushed by the tracker on /clients (no acknowledgement): a receipt settled or refused. */
export const DashboardReceipt = z.object({
  hostId: Label,
  session: Label,
  step: z.number(),
  ok: z.boolean(),
  code: Label.optional(),
  modelId: Label.nullable(),
  chargedMicro: Count,
  /** The host's settled (spendable) earnings. */
  hostBalanceMicro: z.number().int(),
  /** The host's earnings still pending in escrow for the settlement window; absent from a tracker without escrow. */
  hostPendingMicro: z.number().int().optional(),
  /** Present on the paying account's own pushes. */
  accountBalanceMicro: z.number().int().optional(),
})
export type DashboardReceipt = z.infer<typeof DashboardReceipt>
