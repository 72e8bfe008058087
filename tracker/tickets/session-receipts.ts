import { NeuronError } from '../../protocol'
import type { Accounts } from '../ledger/accounts'
import { type Metering, wireVerdicts } from '../ledger/metering'

/**
 * A client's receipts.submit: only for a session issued to it (or one this tracker never issued), bound to the
 * client's account when it has one, then settled; the verdicts as they travel.
 */
export async function settleClientReceipts(
  d: { readonly metering: Metering; readonly accounts: Pick<Accounts, 'byPublicKey'> },
  session: string,
  receipts: readonly unknown[],
  client: { readonly nodeId: string; readonly publicKey: string },
): Promise<ReturnType<typeof wireVerdicts>> {
  const issuedTo = await d.metering.issuedTo(session)
  if (issuedTo !== undefined && issuedTo !== client.nodeId) {
    throw new NeuronError(
      'not_your_session',
      `session ${session} was issued to another client; submit receipts for your own sessions.`,
    )
  }
  const account = await d.accounts.byPublicKey(client.publicKey)
  if (account !== undefined) await d.metering.bind(session, account.accountId)
  return wireVerdicts(await d.metering.settle(session, receipts))
}
