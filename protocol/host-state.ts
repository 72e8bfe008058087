import { z } from 'zod'
import { BlockRange } from './blocks'
import { MAX_CPU_FLAGS, MAX_GPUS, MAX_LABEL_CHARS, MAX_PATH_CHARS, MAX_URL_CHARS } from './limits'
import { Count, ModelId } from './manifest'
import { CertFingerprint, MAX_CANDIDATES } from './reachability'
import { RelayOffer } from './relays'

// What a host tells the tracker about itself: the computer it runs on, and what it serves now and how fast.

const Label = z.string().max(MAX_LABEL_CHARS)
const Url = z.string().max(MAX_URL_CHARS).url()

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
