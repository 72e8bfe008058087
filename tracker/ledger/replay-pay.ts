import type { Receipt } from '../../protocol'
import type { Escrow } from './escrow'
import type { IssuedSession } from './issued-session'
import type { Ledger } from './ledger'
import { hopCharge } from './pricing'
import { standbyShares } from './standby'
import { balancesAfter, type ReceiptVerdict } from './verdicts'

/**
 * A replay rebuilds a cache: the replacing host is paid what the failed host earned for such a step (the step's price
 * less the swarm's fee and its twins' standby fee), first from what the failed host earned in the session (never more
 * than that, over all the session's replays), and the consumer pays the rest. A failover costs an honest client
 * nothing; numbering steps as replays, or claiming a failure of a hop that earned nothing, buys nothing either: those
 * rebuilds are paid in full.
 */
export async function payReplay(
  ledger: Ledger,
  escrow: Escrow,
  session: string,
  issued: IssuedSession,
  r: Receipt,
  now: number,
  standbyBps: number,
): Promise<ReceiptVerdict> {
  const tx = ledger.store
  const failed = issued.failed.find(
    (f) => f.hostId !== r.hostId && f.blocks[0] <= r.blocks[0] && r.blocks[1] <= f.blocks[1],
  )
  const tokens = Math.min(r.tokens, issued.routed?.maxTokens ?? r.tokens)
  const owed = hopCharge(issued.price, issued.nLayer, { step: r.position === 0 ? 1 : 2, blocks: r.blocks, tokens })
  // what the failed host earned for such a step: less the standby fee its twins took (standby.ts), so a replay paid
  // from its earnings costs an honest client nothing
  const standby = failed === undefined ? [] : standbyShares(issued.hops, failed, owed, standbyBps, issued.issuedTo)
  const earned = owed - ledger.fee(owed) - standby.reduce((sum, [, share]) => sum + share, 0)
  const moved =
    failed === undefined ? 0 : Math.max(0, Math.min(earned, await escrow.forfeitable(session, failed.hostId, tx)))
  // what the failed host's earnings did not cover, at the step's price
  const charge = issued.accountId === null || moved >= earned ? 0 : owed - moved
  const result = await ledger.payReplay(
    {
      receipt: r,
      modelId: issued.modelId,
      accountId: issued.accountId,
      failedHost: failed?.hostId,
      moved,
      charge,
      earnings: escrow,
    },
    now,
  )
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
    balances: await balancesAfter(tx, r.hostId, issued.accountId),
  }
}
