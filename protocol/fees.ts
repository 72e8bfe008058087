// Money facts shared by the tracker's ledger and the app's estimates: one definition each.

/** 1 credit = 1,000,000 micro-credits; the ledger holds integers only. */
export const MICRO = 1_000_000
/** The swarm's share of every charge unless configured: 10 %. */
export const DEFAULT_FEE_BPS = 1000

/** The swarm's fee out of a charge; the host earns the rest. */
export function feeOf(charge: number, feeBps: number): number {
  return Math.floor((charge * feeBps) / 10_000)
}
