import { z } from 'zod'
import { BlockRange } from './blocks'
import { AuditRequest, AuditVerdict } from './checks'
import { GrantChallenge, GrantClaim, GrantClaimed } from './grants'
import { HardwareProfile, ServingState } from './host-state'
import { NodeId, PublicKey } from './identity'
import {
  MAX_BLOCKS,
  MAX_HEARTBEAT_SESSIONS,
  MAX_HOST_IDS,
  MAX_LABEL_CHARS,
  MAX_LISTED,
  MAX_RECEIPTS,
  MAX_SESSION_TOKENS,
  MAX_TOKENIZER_BYTES,
  MAX_TORRENT_BYTES,
  MAX_URL_CHARS,
} from './limits'
import { Count, Manifest, ModelId } from './manifest'
import { PlacementProposal } from './placement'
import { ProbeSetBytes } from './probe-codec'
import { SessionDescription, StunPort } from './punch'
import { RelayAssignment } from './relays'
import { LatencyReport, Route } from './routes'
import { rpc } from './rpc'
import { SessionTurn, Ticket } from './tickets'

// The tracker's Socket.IO contract: the events hosts send on /hosts and apps and clients on /clients, what it answers
// and pushes, and the listings of hosts and models those answers carry.

/** Raw bytes: Socket.IO carries Buffers as binary attachments. */
export const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected binary data')
/** Raw bytes, at most `max` of them. */
const BytesUpTo = (max: number) => Bytes.refine((b) => b.byteLength <= max, `at most ${max} bytes`)
const Label = z.string().max(MAX_LABEL_CHARS)
const Url = z.string().max(MAX_URL_CHARS).url()
const InfoHash = z.string().regex(/^[0-9a-f]{40}$/)

export const ModelSummary = z.object({
  modelId: ModelId,
  name: Label,
  architecture: Label,
  nLayer: z.number().int().positive(),
  bytes: Count,
  infoHash: InfoHash,
  /** Ready hosts serving each block. */
  coverage: z.array(Count).max(MAX_BLOCKS),
  /** The GGUF it was packed from, by name and sha256 (absent from older trackers): a Hub file's swarm model. */
  source: z
    .object({
      file: z.string().max(512),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    })
    .optional(),
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
   * `idleOpens`: sessions opened and never stepped long enough that a full host gives one up to a waiting key (host
   * admission's squattedSession), so the tracker routes a waiting key there (absent from older hosts: none).
   */
  'host.heartbeat': rpc(
    z.object({
      activeSessions: Count,
      sessions: z.array(SessionId).max(MAX_HEARTBEAT_SESSIONS).optional(),
      idleOpens: Count.optional(),
    }),
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
  /** The UDP port of the tracker's STUN server on its own address (null: it runs none), for hole punching. */
  'stun.port': rpc(Empty, StunPort),
  /**
   * Signalling for a channel this host punches to another host that takes no connections (protocol/punch.ts), to
   * forward a session's hidden states to it hop to hop: the offer to it, its answer back.
   */
  'punch.open': rpc(z.object({ hostId: NodeId, offer: SessionDescription }), z.object({ answer: SessionDescription })),
}

/** Events the tracker sends a host: frames relayed for hosts that accept no connections. */
export const TrackerToHost = {
  /** `from`: the public key of the client the tracker relays for (it authenticated it). */
  'relay.frame': rpc(z.object({ frame: Bytes, from: PublicKey }), z.object({ frame: Bytes })),
  /**
   * A client's WebRTC offer (protocol/punch.ts), for a data channel punched through both routers: the host answers
   * with its own description, and binds the channel's sessions to `from`, the key the tracker authenticated.
   */
  'punch.offer': rpc(
    z.object({ offer: SessionDescription, from: PublicKey }),
    z.object({ answer: SessionDescription }),
  ),
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
      /**
       * Prefix affinity: the prompt's first `position` tokens are those of the client's own earlier session `session`
       * (open, or ended a short while ago) on `hops`. Where those hosts can take the session, the route is theirs and
       * each ticket names the fork: the hosts copy those positions from the session's cache, and the prompt after them
       * is what step 1 carries and pays (`promptTokens` counts the whole prompt). Otherwise a plain route.
       */
      fork: z
        .object({
          session: SessionId,
          position: z.number().int().min(1).max(MAX_SESSION_TOKENS),
          hops: z
            .array(z.object({ hostId: NodeId, blocks: BlockRange }))
            .min(1)
            .max(MAX_BLOCKS),
        })
        .optional(),
    }),
    Route,
  ),
  /**
   * A conversation's next turn on a session still open on its hops: a ticket per hop (each one the tracker routed for
   * the session, in the client's order) that lets the turn's first step carry its new prompt tokens. The positions stay
   * within the session's maxTokens, so its credit hold covers them; its rent runs on as the hops keep the cache.
   */
  'route.turn': rpc(
    z.object({
      session: SessionId,
      turn: SessionTurn,
      hops: z
        .array(z.object({ hostId: NodeId, blocks: BlockRange }))
        .min(1)
        .max(MAX_BLOCKS),
    }),
    z.object({ tickets: z.array(Ticket).min(1).max(MAX_BLOCKS) }),
  ),
  'placement.preview': rpc(z.object({ modelId: ModelId, profile: HardwareProfile }), PlacementProposal),
  'relay.forward': rpc(z.object({ hostId: NodeId, frame: Bytes }), z.object({ frame: Bytes })),
  /** The UDP port of the tracker's STUN server on its own address (null: it runs none), for hole punching. */
  'stun.port': rpc(Empty, StunPort),
  /** Signalling for a hole-punched data channel to a host (protocol/punch.ts): the offer to it, its answer back. */
  'punch.open': rpc(z.object({ hostId: NodeId, offer: SessionDescription }), z.object({ answer: SessionDescription })),
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
