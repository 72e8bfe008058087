import {
  DEFAULT_FEE_BPS,
  feeOf,
  type HardwareProfile,
  type HostingPreview,
  type Limits,
  type PlacementProposal,
} from '../../protocol'

/** What a host keeps of a charge at the default swarm fee, micro-credits (when the tracker has not said). */
export function hostShare(chargedMicro: number): number {
  return chargedMicro - feeOf(chargedMicro, DEFAULT_FEE_BPS)
}

/** The proposal's credits per hour at full load, as the tracker priced it (null without a proposal or a price). */
export function withCredits(placement: PlacementProposal): HostingPreview {
  return { placement, creditsPerHourMicro: placement.proposal?.hostMicroPerHour ?? null }
}

/**
 * The placement with a memory refusal blamed on the memory limit when that limit, not the computer, is what
 * held no block: the person can raise a limit, but "free memory" tells them to close programs that are not the cause.
 */
export function blameMemoryLimit(
  placement: PlacementProposal,
  profile: HardwareProfile,
  limits: Limits,
): PlacementProposal {
  const refusal = placement.refusal
  const limit = limits.memoryBytes
  const onGpu = limits.useGpu && profile.gpus.length > 0
  if (refusal?.code !== 'too_little_memory' || limit === null || onGpu || limit >= profile.memory.availableBytes)
    return placement
  const needed =
    refusal.neededBytes === undefined
      ? ''
      : `: its smallest range needs about ${formatSize(refusal.neededBytes)} (weights and KV cache)`
  return {
    ...placement,
    refusal: {
      ...refusal,
      reason:
        `This computer's memory limit of ${formatSize(limit)} holds no block of ` +
        `${placement.modelId}${needed}; raise the memory limit in Settings`,
    },
  }
}

/** Bytes as a person reads them: MB below a GB, so a small limit never reads "0.0 GB". */
export function formatSize(bytes: number): string {
  if (bytes < 1e6) return `${bytes} bytes`
  return bytes < 1e9 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e9).toFixed(1)} GB`
}
