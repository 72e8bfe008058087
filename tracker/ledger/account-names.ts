/** The ledger account names: a consumer, a host (settled and in escrow), the swarm's fee and where grants come from. */
export const consumerAccount = (accountId: string) => `consumer:${accountId}`
/** A host's settled earnings: spendable. */
export const hostAccount = (hostId: string) => `host:${hostId}`
/**
 * A host's pending earnings: held for the settlement window,
 * then released to hostAccount (or voided back to its payers).
 */
export const escrowAccount = (hostId: string) => `escrow:${hostId}`
export const FEE_ACCOUNT = 'swarm:fee'
export const GRANTS_ACCOUNT = 'swarm:grants'
