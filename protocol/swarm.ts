import { z } from 'zod'
import { BlockRange } from './blocks'
import { NodeId } from './identity'
import { Count, Manifest, ModelId } from './manifest'
import { rpc } from './rpc'

/** Raw bytes: Socket.IO carries Buffers as binary attachments. */
export const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected binary data')

export const HardwareProfile = z.object({
  cpu: z.object({ model: z.string(), cores: Count, physicalCores: Count, flags: z.array(z.string()) }),
  memory: z.object({ totalBytes: Count, availableBytes: Count }),
  gpus: z.array(z.object({ vendor: z.string(), model: z.string(), vramBytes: Count })),
  disk: z.object({ path: z.string(), freeBytes: Count, readBytesPerSecond: Count }),
  /** Measured memory copy bandwidth: decoding is memory-bound, so it predicts time per block before loading. */
  memoryBytesPerSecond: Count,
  /** Threads the host gives its runtime. */
  threads: z.number().int().positive(),
})
export type HardwareProfile = z.infer<typeof HardwareProfile>

export const HostStatus = z.enum(['idle', 'downloading', 'loading', 'ready', 'draining'])
export type HostStatus = z.infer<typeof HostStatus>

export const ServingState = z.object({
  modelId: ModelId.nullable(),
  blocks: BlockRange.nullable(),
  status: HostStatus,
  /** Download or load progress, 0..1. */
  progress: z.number().min(0).max(1),
  kvCapacityTokens: Count,
  activeSessions: Count,
  maxSessions: Count,
  /** Measured compute time per block per decoded token, ms; null until measured. */
  msPerBlock: z.number().positive().nullable(),
  /** The data-plane WebSocket address, or null when the host is reached through the tracker's relay. */
  endpoint: z.string().url().nullable(),
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
  name: z.string(),
  architecture: z.string(),
  nLayer: z.number().int().positive(),
  bytes: Count,
  infoHash: z.string().regex(/^[0-9a-f]{40}$/),
  /** Ready hosts serving each block. */
  coverage: z.array(Count),
})
export type ModelSummary = z.infer<typeof ModelSummary>

export const HostSummary = z.object({ hostId: NodeId, online: z.boolean(), profile: HardwareProfile, state: ServingState, lastSeen: z.number() })
export type HostSummary = z.infer<typeof HostSummary>

export const RouteHop = z.object({ hostId: NodeId, blocks: BlockRange, endpoint: z.string().url().nullable() })
export type RouteHop = z.infer<typeof RouteHop>
export const Route = z.object({ modelId: ModelId, hops: z.array(RouteHop).min(1), expectedMsPerToken: z.number().nonnegative() })
export type Route = z.infer<typeof Route>

const PlacementOption = z.object({
  blocks: BlockRange,
  bytesToDownload: Count,
  memoryBytes: Count,
  /** What this host adds to each block of its range, tokens/s. */
  expectedTokensPerSecond: z.number().nonnegative(),
  /** The swarm's weakest block once this host serves the range, tokens/s. */
  swarmTokensPerSecond: z.number().nonnegative(),
  /** The fastest route through this host on this range, ms per token; null while no complete route exists. */
  bestRouteMsPerToken: z.number().nonnegative().nullable(),
  /** What this range would earn the host in an hour at `expectedTokensPerSecond`, micro-credits, at the tracker's price and fee. */
  hostMicroPerHour: Count.optional(),
})
export type PlacementOption = z.infer<typeof PlacementOption>
const Served = z.object({ tokensPerSecond: z.number().nonnegative(), hosts: Count })
export const PlacementProposal = z.object({
  modelId: ModelId,
  /** null when this host should not serve this model; `refusal` says why. */
  proposal: PlacementOption.nullable(),
  refusal: z.object({ code: z.string(), reason: z.string() }).nullable(),
  /** The swarm's weakest block today, tokens/s (0 while a block is not served). */
  swarmTokensPerSecond: z.number().nonnegative(),
  coverage: z.array(z.object({ block: Count, before: Served, after: Served })),
  alternatives: z.array(PlacementOption.extend({ why: z.string() })),
})
export type PlacementProposal = z.infer<typeof PlacementProposal>

const Empty = z.object({}).strict()
const SessionId = z.string().regex(/^[0-9a-f]{32}$/)

/** Events a host sends the tracker on the /hosts namespace. */
export const HostToTracker = {
  'host.hello': rpc(z.object({ profile: HardwareProfile, state: ServingState }), z.object({ hostId: NodeId, heartbeatMs: z.number().int().positive() })),
  'host.state': rpc(ServingState, Empty),
  'host.heartbeat': rpc(z.object({ activeSessions: Count }), Empty),
  'placement.request': rpc(z.object({ modelId: ModelId }), PlacementProposal),
  'model.get': rpc(z.object({ modelId: ModelId }), z.object({ manifest: Manifest, torrent: Bytes, infoHash: z.string() })),
}

/** Events the tracker sends a host: frames relayed for hosts that accept no connections. */
export const TrackerToHost = {
  'relay.frame': rpc(z.object({ frame: Bytes }), z.object({ frame: Bytes })),
}

/** Events an app or client sends the tracker on the /clients namespace. */
export const ClientToTracker = {
  'models.list': rpc(Empty, z.object({ models: z.array(ModelSummary) })),
  'model.get': HostToTracker['model.get'],
  /** `tokenizer`: the model's metadata-only GGUF (vocabulary, chat template), for clients. */
  'model.publish': rpc(z.object({ manifest: Manifest, torrent: Bytes, tokenizer: Bytes }), z.object({ modelId: ModelId, infoHash: z.string() })),
  'model.tokenizer': rpc(z.object({ modelId: ModelId }), z.object({ tokenizer: Bytes })),
  'hosts.list': rpc(Empty, z.object({ hosts: z.array(HostSummary) })),
  'route.plan': rpc(
    z.object({
      modelId: ModelId,
      maxTokens: z.number().int().positive(),
      /** Hosts not to use (e.g. one that just failed). */
      exclude: z.array(NodeId).default([]),
      /** Plan only these blocks (failover of one span); default the whole model. */
      span: BlockRange.optional(),
      /** With `span`: the hosts before and after it on the route, so their links count. */
      previousHop: NodeId.optional(),
      nextHop: NodeId.optional(),
      /** With `span`: the host that just failed it (counted against its reputation). */
      failedHost: NodeId.optional(),
      /** The session the route is for: the tracker remembers it to check the hops' receipts. */
      session: SessionId.optional(),
    }),
    Route,
  ),
  'placement.preview': rpc(z.object({ modelId: ModelId, profile: HardwareProfile }), PlacementProposal),
  'relay.forward': rpc(z.object({ hostId: NodeId, frame: Bytes }), z.object({ frame: Bytes })),
  /** An app's SwarmClient hands in its session's signed receipts; its key pair's account pays. */
  'receipts.submit': rpc(
    z.object({ session: SessionId, receipts: z.array(z.unknown()).max(4096) }),
    z.object({ verdicts: z.array(z.object({ hostId: z.string(), step: z.number(), ok: z.boolean(), code: z.string().optional(), charged: Count })) }),
  ),
  /** Join the dashboard pushes of these hosts (your own account's come without asking). */
  'dashboard.subscribe': rpc(z.object({ hostIds: z.array(NodeId).max(64) }), z.object({ hostIds: z.array(NodeId) })),
}

/** Pushed by the tracker on /clients (no acknowledgement): a receipt settled or refused. */
export const DashboardReceipt = z.object({
  hostId: z.string(),
  session: z.string(),
  step: z.number(),
  ok: z.boolean(),
  code: z.string().optional(),
  modelId: z.string().nullable(),
  chargedMicro: Count,
  hostBalanceMicro: z.number().int(),
  /** Present on the paying account's own pushes. */
  accountBalanceMicro: z.number().int().optional(),
})
export type DashboardReceipt = z.infer<typeof DashboardReceipt>
