import { z } from 'zod'
import { Limits } from './app-settings'
import { BlockRange } from './blocks'
import { HardwareProfile } from './host-state'
import { MAX_BLOCKS } from './limits'
import { Count, ModelId } from './manifest'
import { PlacementProposal } from './placement'
import { rpc, WireError } from './rpc'
import { ModelSummary } from './swarm'

// What this computer can serve, the models it may host, and its hosting from preview to serving: the Computer and
// Host screens' part of the app's contract (protocol/app.ts).

const Micro = z.number().int()
const Empty = z.object({}).strict()

export const ComputerView = z.object({
  profile: HardwareProfile,
  /** Bytes of layers this computer can serve within its limits (memory for weights and KV, disk for artifacts). */
  servableBytes: Count,
  /** One sentence for the user: what the numbers mean for hosting. */
  summary: z.string(),
  limits: Limits,
})
export type ComputerView = z.infer<typeof ComputerView>

export const ArtifactProgress = z.object({
  file: z.string(),
  downloadedBytes: Count,
  totalBytes: Count,
  bytesPerSecond: z.number().nonnegative(),
  peers: Count,
  /** Seconds left at the current speed; null while the speed is unknown. */
  etaSeconds: z.number().nonnegative().nullable(),
})
export type ArtifactProgress = z.infer<typeof ArtifactProgress>

export const HostingPhase = z.enum(['idle', 'downloading', 'loading', 'serving', 'paused', 'stopping', 'failed'])
export type HostingPhase = z.infer<typeof HostingPhase>

export const HostingStatus = z.object({
  phase: HostingPhase,
  modelId: ModelId.nullable(),
  blocks: BlockRange.nullable(),
  /** Per artifact while downloading (and after, at 100 %). */
  artifacts: z.array(ArtifactProgress),
  serving: z
    .object({
      activeSessions: Count,
      maxSessions: Count,
      /** Decode speed of this host's range, tokens/s, from its measured time per block. */
      tokensPerSecond: z.number().nonnegative(),
      /** Block-tokens served since hosting started (from settled receipts). */
      servedBlockTokens: Count,
      startedAt: z.number(),
      endpoint: z.string().nullable(),
    })
    .nullable(),
  /** Why hosting failed (phase 'failed'); null otherwise. */
  error: WireError.nullable(),
})
export type HostingStatus = z.infer<typeof HostingStatus>

/** The tracker's placement proposal plus what it means in credits for this computer. */
export const HostingPreview = z.object({
  placement: PlacementProposal,
  /** Expected micro-credits per hour for the proposed range at full load; null without a proposal. */
  creditsPerHourMicro: Micro.nullable(),
  /** Bytes of each offered range's files already on this computer (absent from older backends). */
  bytesOnDisk: z
    .array(z.object({ blocks: BlockRange, bytes: Count }))
    .max(MAX_BLOCKS + 1)
    .optional(),
})
export type HostingPreview = z.infer<typeof HostingPreview>

/** computer.*, models.* and hosting.*: what this computer offers, and which blocks of which model it serves. */
export const HostingMethods = {
  'computer.get': rpc(z.object({ refresh: z.boolean().default(false) }).strict(), ComputerView),
  'models.list': rpc(Empty, z.object({ models: z.array(ModelSummary) })),
  /** Packs a GGUF on this computer and publishes it to the tracker (this app seeds it). */
  'models.add': rpc(
    z.object({ path: z.string().min(1, 'give the path of a .gguf file') }).strict(),
    z.object({ modelId: ModelId }),
  ),
  /** Shows the OS file dialog for a .gguf (where Settings.canPickFiles); null when the user cancels. */
  'models.pick': rpc(Empty, z.object({ path: z.string().nullable() })),
  'hosting.preview': rpc(z.object({ modelId: ModelId }).strict(), HostingPreview),
  'hosting.start': rpc(z.object({ modelId: ModelId, blocks: BlockRange }).strict(), HostingStatus),
  /** Drains and unloads, keeping the artifacts; resume loads them again. */
  'hosting.pause': rpc(Empty, HostingStatus),
  'hosting.resume': rpc(Empty, HostingStatus),
  'hosting.stop': rpc(Empty, HostingStatus),
  'hosting.status': rpc(Empty, HostingStatus),
} as const
