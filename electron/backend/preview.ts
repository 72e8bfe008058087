import { DEFAULT_FEE_BPS, feeOf, type HostingPreview, type PlacementProposal } from '../../protocol'

/** What a host keeps of a charge at the default swarm fee, micro-credits (when the tracker has not said). */
export function hostShare(chargedMicro: number): number {
  return chargedMicro - feeOf(chargedMicro, DEFAULT_FEE_BPS)
}

/** The proposal's credits per hour at full load, as the tracker priced it (null without a proposal or a price). */
export function withCredits(placement: PlacementProposal): HostingPreview {
  return { placement, creditsPerHourMicro: placement.proposal?.hostMicroPerHour ?? null }
}
