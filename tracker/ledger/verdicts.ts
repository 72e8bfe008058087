// What settling a receipt answers: the verdict, the events metering emits, and the wire form.
import { consumerAccount, escrowAccount, hostAccount } from './account-names'
import type { LedgerStore } from './ledger-store'

export interface ReceiptVerdict {
  readonly hostId: string
  readonly step: number
  readonly ok: boolean
  /**
   * On refusal: forged (bad_signature), replayed, route_mismatch, position_mismatch, unknown_session, bad_receipt,
   * insufficient_credits; already_settled for a step the other party handed in first (host and client both do).
   */
  readonly code?: string
  readonly message?: string
  /** Micro-credits the consumer paid for this receipt. */
  readonly charged: number
  /**
   * The refusal counts against the host: it signed, with its registered key, a receipt of a session
   * the tracker routed, and the route or its terms refute it. An unsigned, forged or misfiled
   * receipt proves nothing about the host it names, so anyone could pin it on any host.
   */
  readonly fault?: boolean
  /**
   * The session's route was issued to the host's own key (an app's host serving its own chats): paid like any, but it
   * proves nothing about serving others, so a host's record does not count it (a host could pad its completed steps).
   */
  readonly selfServed?: boolean
  /**
   * On a settled receipt, the host's (settled and pending) and payer's balances right after it, read in its
   * transaction: exact pushes for a batch.
   */
  readonly balances?: { readonly host: number; readonly pending: number; readonly account: number | null }
  /** On a settled receipt, the standby fee each twin named for the hop was paid out of it (standby.ts). */
  readonly standby?: readonly (readonly [string, number])[]
}

export interface MeteringEvents {
  /**
   * Two hops of one step do not join: one took as input what the hop before it did not sign as its
   * output. Whoever carried the hidden states between them (the client, or a host that signs other bytes
   * than it sends) broke the chain; both are paid what they ran.
   */
  seam: [session: string, step: number, message: string]
  /** A receipt verified and settled (or refused): the reputation and dashboards listen. */
  verdict: [session: string, verdict: ReceiptVerdict, accountId: string | null, modelId: string | null]
}

/** A verdict as it goes back over the wire. */
export function wireVerdicts(verdicts: readonly ReceiptVerdict[]) {
  return {
    verdicts: verdicts.map((v) => ({
      hostId: v.hostId,
      step: v.step,
      ok: v.ok,
      ...(v.code === undefined ? {} : { code: v.code }),
      charged: v.charged,
    })),
  }
}

/** A settled receipt's balances, in its transaction: three indexed reads, cheap beside the commit they ride in. */
export async function balancesAfter(
  store: Pick<LedgerStore, 'balance'>,
  hostId: string,
  accountId: string | null,
): Promise<NonNullable<ReceiptVerdict['balances']>> {
  const account = accountId === null ? null : await store.balance(consumerAccount(accountId))
  return {
    host: await store.balance(hostAccount(hostId)),
    pending: await store.balance(escrowAccount(hostId)),
    account,
  }
}
