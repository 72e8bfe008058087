import { REPLAY_STEP_BASE, type Receipt } from '../../protocol'
import type { Escrow } from './escrow'
import type { IssuedSession } from './issued-session'
import type { Ledger } from './ledger'
import { stepCharge } from './receipt-terms'
import { payReplay } from './replay-pay'
import { DEFAULT_STANDBY_BPS, standbyShares } from './standby'
import { balancesAfter, type ReceiptVerdict } from './verdicts'

/**
 * Pays a step whose receipt step-check.ts passed (one the client relayed or a host forwarded hop to hop alike): by
 * the tracker's own count of its tokens, never the host's claim, charged to the session's payer; the host's share
 * waits in its escrow for the settlement window (escrow.ts). A replay after a failover is paid from the failed
 * host's earnings first (replay-pay.ts).
 */
export async function payStep(
  ledger: Ledger,
  escrow: Escrow,
  session: string,
  issued: IssuedSession,
  r: Receipt,
  now: number,
  /** The standby fee, basis points of the step's charge to the hop's named twins (standby.ts). */
  standbyBps = DEFAULT_STANDBY_BPS,
): Promise<ReceiptVerdict> {
  if (r.step >= REPLAY_STEP_BASE) return payReplay(ledger, escrow, session, issued, r, now, standbyBps)
  // Local use: a step the payer's own host served (its app chatting through itself) costs nothing. Paying oneself
  // would only move credits between one's own accounts, less the swarm's fee, and would turn a grant into earnings.
  const local = issued.issuedTo !== null && issued.issuedTo === r.hostId
  const paid = issued.accountId !== null && !local
  const charge = paid ? stepCharge(issued, r) : 0
  const standby = standbyShares(issued.hops, r, charge, standbyBps, issued.issuedTo)
  const result = await ledger.chargeStep(
    { receipt: r, modelId: issued.modelId, accountId: issued.accountId, charge, earnings: escrow, standby },
    now,
  )
  if (!result.posted && result.reason === 'duplicate') {
    // Host and client both hand in each receipt: the second is no fault, and pays nothing.
    return {
      hostId: r.hostId,
      step: r.step,
      ok: false,
      code: 'already_settled',
      message: `step ${r.step} blocks [${r.blocks[0]}, ${r.blocks[1]}) is settled`,
      charged: 0,
    }
  }
  if (!result.posted) {
    // Not the host's fault: the consumer's credits ran out; not logged against it.
    return {
      hostId: r.hostId,
      step: r.step,
      ok: false,
      code: 'insufficient_credits',
      message: 'the account cannot pay for this step',
      charged: 0,
    }
  }
  return {
    hostId: r.hostId,
    step: r.step,
    ok: true,
    charged: charge,
    balances: await balancesAfter(ledger.store, r.hostId, issued.accountId),
    ...(standby.length === 0 ? {} : { standby }),
  }
}
