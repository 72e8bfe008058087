import type { Receipt } from '../../protocol'
import { feeOf } from '../../protocol'
import { consumerAccount, FEE_ACCOUNT } from './accounts'
import type { Escrow } from './escrow'
import type { IssuedSession } from './issued-session'
import type { LedgerStore } from './ledger-store'
import { hopCharge } from './pricing'
import { receiptKey } from './receipt-terms'
import type { ReceiptVerdict } from './verdicts'

/**
 * What settling a replay needs of the metering it runs in: its transaction, the escrow, the fee, the balances after.
 */
export interface ReplayContext {
  readonly tx: LedgerStore
  readonly escrow: Escrow
  readonly feeBps: number
  balancesAfter(hostId: string, accountId: string | null): Promise<NonNullable<ReceiptVerdict['balances']>>
}

/**
 * A replay rebuilds a cache: the replacing host is paid at the step's price, first from what the failed host earned
 * in the session (never more than that, over all the session's replays), and the consumer pays the rest. A failover
 * costs an honest client nothing; numbering steps as replays, or claiming a failure of a hop that earned nothing,
 * buys nothing either: those rebuilds are paid in full.
 */
export async function settleReplay(
  ctx: ReplayContext,
  session: string,
  issued: IssuedSession,
  r: Receipt,
  now: number,
): Promise<ReceiptVerdict> {
  const { tx, escrow } = ctx
  const failed = issued.failed.find(
    (f) => f.hostId !== r.hostId && f.blocks[0] <= r.blocks[0] && r.blocks[1] <= f.blocks[1],
  )
  const tokens = Math.min(r.tokens, issued.routed?.maxTokens ?? r.tokens)
  const owed = hopCharge(issued.price, issued.nLayer, { step: r.position === 0 ? 1 : 2, blocks: r.blocks, tokens })
  const earned = owed - feeOf(owed, ctx.feeBps)
  const moved =
    failed === undefined ? 0 : Math.max(0, Math.min(earned, await escrow.forfeitable(session, failed.hostId, tx)))
  const consumer = issued.accountId === null ? null : consumerAccount(issued.accountId)
  // what the failed host's earnings did not cover, at the step's price
  const charge = consumer === null || moved >= earned ? 0 : owed - moved
  const fee = feeOf(charge, ctx.feeBps)
  const entries = [
    ...(failed === undefined || moved === 0
      ? []
      : [
          { account: escrow.earningsAccount(failed.hostId), amount: -moved },
          { account: escrow.earningsAccount(r.hostId), amount: moved },
        ]),
    ...(consumer === null || charge === 0
      ? []
      : [
          { account: consumer, amount: -charge },
          { account: escrow.earningsAccount(r.hostId), amount: charge - fee },
          { account: FEE_ACCOUNT, amount: fee },
        ]),
  ]
  const result = await tx.post({
    kind: charge > 0 ? 'charge' : 'forfeit',
    idempotencyKey: receiptKey(r),
    modelId: issued.modelId,
    entries,
    ...(consumer === null || charge === 0 ? {} : { noOverdraft: consumer }),
    receipt: {
      body: r,
      modelId: issued.modelId,
      accountId: issued.accountId,
      hostEarned: moved + charge - fee,
      ...(charge > 0 ? { charged: charge, fee } : {}),
      escrow: escrow.newState,
      ...(moved > 0 ? { forfeitFrom: failed?.hostId } : {}),
    },
    at: now,
  })
  if (result.posted && failed !== undefined && moved > 0) await escrow.forfeited(session, failed.hostId, moved, tx)
  if (!result.posted && result.reason !== 'duplicate')
    return {
      hostId: r.hostId,
      step: r.step,
      ok: false,
      code: 'insufficient_credits',
      message: 'the account cannot pay for this replay',
      charged: 0,
    }
  if (!result.posted)
    return {
      hostId: r.hostId,
      step: r.step,
      ok: false,
      code: 'already_settled',
      message: `replay step ${r.step} is settled`,
      charged: 0,
    }
  return {
    hostId: r.hostId,
    step: r.step,
    ok: true,
    charged: charge,
    balances: await ctx.balancesAfter(r.hostId, issued.accountId),
  }
}
