import { DEFAULT_FEE_BPS, type PlacementOption, type PlacementProposal } from '../../protocol'
import { hostMicroPerHour, type PricingOptions, priceOf } from '../ledger/pricing'
import type { ModelCatalog } from '../models/catalog'

/** A placement with what each option would earn the host at this tracker's price and fee. */
export function pricedPlacement(
  catalog: ModelCatalog,
  pricing: PricingOptions,
  placement: PlacementProposal,
): PlacementProposal {
  const { manifest } = catalog.get(placement.modelId)
  const price = priceOf(manifest, pricing)
  const earn = <T extends PlacementOption>(o: T): T => ({
    ...o,
    hostMicroPerHour: hostMicroPerHour(
      price,
      pricing.feeBps ?? DEFAULT_FEE_BPS,
      manifest.nLayer,
      o.blocks,
      o.expectedTokensPerSecond,
    ),
  })
  return {
    ...placement,
    proposal: placement.proposal === null ? null : earn(placement.proposal),
    alternatives: placement.alternatives.map(earn),
  }
}
