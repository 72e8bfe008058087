import {
  type BlockRange,
  type ComputerView,
  type HardwareProfile,
  KV_BUDGET,
  type Limits,
  type Manifest,
  MEMORY_SHARE,
  rangeCacheBytes,
} from '../../protocol'

/** The yardstick in the summary: Llama 3 70B at Q4_K_M is about 42 GB over 80 blocks. */
const REFERENCE = { name: 'Llama 3 70B', blocks: 80, bytesPerBlock: 0.52e9 } as const

/** The profile as the limits let the swarm see it: memory, disk, threads and GPUs capped. */
export function limitedProfile(profile: HardwareProfile, limits: Limits): HardwareProfile {
  return {
    ...profile,
    memory: {
      ...profile.memory,
      availableBytes:
        limits.memoryBytes === null
          ? profile.memory.availableBytes
          : Math.min(profile.memory.availableBytes, limits.memoryBytes),
    },
    disk: {
      ...profile.disk,
      freeBytes:
        limits.diskBytes === null ? profile.disk.freeBytes : Math.min(profile.disk.freeBytes, limits.diskBytes),
    },
    gpus: limits.useGpu ? profile.gpus : [],
    threads: limits.threads,
  }
}

/**
 * Bytes of layers that fit both in memory (80 % of what is free plus VRAM, or the limit) and on disk.
 * A limit above what the computer has counts as what it has: it allows, it does not add.
 */
export function servableBytes(profile: HardwareProfile, limits: Limits): number {
  const vram = limits.useGpu ? profile.gpus.reduce((s, g) => s + g.vramBytes, 0) : 0
  const has = profile.memory.availableBytes + vram
  const memory = limits.memoryBytes === null ? Math.floor(MEMORY_SHARE * has) : Math.min(limits.memoryBytes, has)
  const disk = limits.diskBytes === null ? profile.disk.freeBytes : Math.min(limits.diskBytes, profile.disk.freeBytes)
  return Math.max(0, Math.min(memory, disk))
}

/** Memory blocks [a, b) take once loaded: their weights, the embedding or head at the ends, and their KV cache. */
export function rangeMemoryBytes(manifest: Manifest, blocks: BlockRange): number {
  const [a, b] = blocks
  const weights = manifest.bytesPerBlock.slice(a, b).reduce((s, n) => s + n, 0)
  const ends = manifest.artifacts
    .filter((x) => (x.role === 'embed' && a === 0) || (x.role === 'head' && b === manifest.nLayer))
    .reduce((s, x) => s + x.bytes, 0)
  return weights + ends + rangeCacheBytes(manifest, blocks, KV_BUDGET)
}

export function computerView(profile: HardwareProfile, limits: Limits): ComputerView {
  const bytes = servableBytes(profile, limits)
  return { profile, limits, servableBytes: bytes, summary: summarize(bytes) }
}

function summarize(bytes: number): string {
  const gb = bytes / 1e9
  const blocks = Math.floor(bytes / REFERENCE.bytesPerBlock)
  const amount = `about ${gb < 10 ? gb.toFixed(1) : gb.toFixed(0)} GB of layers`
  if (bytes <= 0) return 'This computer has no room to serve layers within its limits: raise the memory or disk limit.'
  if (blocks === 0)
    return (
      `This computer can serve ${amount}: enough for small models, but not yet one of ${REFERENCE.name}'s ` +
      `blocks at Q4.`
    )
  if (blocks >= REFERENCE.blocks)
    return `This computer can serve ${amount}: enough for all ${REFERENCE.blocks} of ${REFERENCE.name}'s blocks at Q4.`
  return (
    `This computer can serve ${amount}: enough for ${blocks} of ${REFERENCE.name}'s ${REFERENCE.blocks} ` +
    `blocks at Q4.`
  )
}
