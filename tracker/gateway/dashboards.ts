import type { IncomingMessage, ServerResponse } from 'node:http'
import { nodeIdOf } from '../../identity/keys'
import { escrowAccount, hostAccount } from '../ledger/accounts'
import type { StoredReceipt } from '../ledger/ledger-store'
import { authenticate, requireMember } from './auth'
import type { GatewayDeps } from './deps'
import { sendJson } from './http'

/** The /v1/dashboard queries: a consumer's own balance, and any host's earnings, receipts and reputation. */
export class Dashboards {
  constructor(
    private readonly deps: Pick<
      GatewayDeps,
      'accounts' | 'ledger' | 'holds' | 'reputation' | 'admits' | 'provenKey' | 'checks' | 'metering'
    >,
  ) {}

  async account(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = await authenticate(req, this.deps)
    sendJson(res, 200, {
      account_id: account.accountId,
      name: account.name,
      balance_micro: await this.deps.accounts.balance(account.accountId),
      held_micro: await this.deps.holds.heldMicro(account.accountId),
    })
  }

  /**
   * Each receipt with `local`: paid by the host's own account (its app chatting through itself), which costs nothing
   * (step-pay.ts). The payer's account itself is not shown.
   */
  private async markLocalUse(
    hostId: string,
    receipts: readonly StoredReceipt[],
  ): Promise<(Omit<StoredReceipt, 'accountId'> & { local: boolean })[]> {
    const owners = new Map<string, Promise<string | null>>()
    const ownerOf = (accountId: string) => {
      let owner = owners.get(accountId)
      if (owner === undefined) {
        owner = this.deps.ledger
          .getAccount(accountId)
          .then((a) => (a?.publicKey == null ? null : nodeIdOf(a.publicKey)))
        owners.set(accountId, owner)
      }
      return owner
    }
    return Promise.all(
      receipts.map(async ({ accountId, ...r }) => ({
        ...r,
        local: accountId !== null && (await ownerOf(accountId)) === hostId,
      })),
    )
  }

  /** Open to anyone on an open swarm; on a private one, to its members (requireMember). */
  async host(req: IncomingMessage, res: ServerResponse, hostId: string): Promise<void> {
    await requireMember(req, this.deps)
    const now = Date.now()
    const { ledger, reputation } = this.deps
    sendJson(res, 200, {
      host_id: hostId,
      // Settled (spendable) earnings; pending ones wait in escrow for the settlement window.
      balance_micro: await ledger.balance(hostAccount(hostId)),
      pending_micro: await ledger.balance(escrowAccount(hostId)),
      settlement_window_ms: this.deps.metering.escrow.windowMs,
      served_block_tokens: await ledger.servedBlockTokens(hostId),
      earnings_by_hour: await ledger.earnings(hostId, 'hour', now - 48 * 3_600_000),
      earnings_by_day: await ledger.earnings(hostId, 'day', now - 30 * 86_400_000),
      recent_receipts: await this.markLocalUse(hostId, await ledger.receipts({ hostId, limit: 20 })),
      rejected_receipts: await ledger.rejections(hostId, 20),
      reputation: reputation.of(hostId),
      reputation_history: await reputation.history(hostId, 50),
      checks: (await this.deps.checks?.(hostId)) ?? null,
    })
  }
}
