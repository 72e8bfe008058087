import type { HostingPreview, Manifest, PlacementProposal } from '../../../protocol'
import { defaultPrice, feeOf, hopCharge } from '../../../tracker/ledger/pricing'

/** The tracker's default swarm fee, basis points (a remote tracker may charge another). */
const SWARM_FEE_BPS = 1000

/** What a host keeps of a charge at the default swarm fee, micro-credits. */
export function hostShare(chargedMicro: number): number {
  return chargedMicro - feeOf(chargedMicro, SWARM_FEE_BPS)
}

/**
 * What the proposed range would earn in an hour at full load: its expected tokens/s times what one
 * decoded token through those blocks pays the host (default price, net of the swarm fee).
 */
export function withCredits(placement: PlacementProposal, manifest: Manifest): HostingPreview {
  const proposal = placement.proposal
  if (proposal === null) return { placement, creditsPerHourMicro: null }
  const charge = hopCharge(defaultPrice(manifest), manifest.nLayer, { step: 2, tokens: 1, blocks: proposal.blocks })
  return { placement, creditsPerHourMicro: Math.round(proposal.expectedTokensPerSecond * hostShare(charge) * 3600) }
}
