import { type AccountBalance, NeuronError } from '../../protocol'
import type { Accounts } from './accounts'
import type { CreditHolds } from './credit-holds'

/**
 * The balance of the account `publicKey` (the key the tracker authenticated on the connection, never one a
 * request names) pays from, and what its sessions in flight hold; unknown_account when it has none.
 */
export async function balanceOfKey(accounts: Accounts, holds: CreditHolds, publicKey: string): Promise<AccountBalance> {
  const account = await accounts.byPublicKey(publicKey)
  if (account === undefined) {
    throw new NeuronError(
      'unknown_account',
      `key ${publicKey.slice(0, 8)}… has no account on this tracker; claim the tracker's grant (grant.challenge) ` +
        `or ask its operator for one (neuron account create --public-key).`,
    )
  }
  return {
    accountId: account.accountId,
    balanceMicro: await accounts.balance(account.accountId),
    heldMicro: await holds.heldMicro(account.accountId),
  }
}
