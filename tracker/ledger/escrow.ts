import { REPLAY_STEP_BASE } from '../../protocol'
import { escrowAccount, hostAccount } from './account-names'
import type { PendingReceipt } from './escrowed-receipts'
import { Ledger, type VoidMove } from './ledger'
import type { LedgerStore } from './ledger-store'

export const DEFAULT_SETTLEMENT_WINDOW_MS = 24 * 3_600_000

/** The settlement window: the option, else $NEURON_SETTLEMENT_WINDOW_MS, else 24 h; 0 pays hosts at once. */
export function settlementWindowMs(
  option: number | undefined,
  env: Record<string, string | undefined> = process.env,
): number {
  const raw =
    option ??
    (env.NEURON_SETTLEMENT_WINDOW_MS === undefined || env.NEURON_SETTLEMENT_WINDOW_MS === ''
      ? undefined
      : env.NEURON_SETTLEMENT_WINDOW_MS)
  if (raw === undefined) return DEFAULT_SETTLEMENT_WINDOW_MS
  const ms = Number(raw)
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw new Error(
      `the settlement window (NEURON_SETTLEMENT_WINDOW_MS) is a whole number of milliseconds, 0 or more, not ` +
        `${raw}; 86400000 is a day.`,
    )
  return ms
}

export interface Released {
  /** Micro-credits moved from escrow to the hosts' settled accounts. */
  readonly releasedMicro: number
  readonly receipts: number
  readonly hosts: number
}

export interface Voided {
  /** The host's pending earnings taken back (its escrow is empty after). */
  readonly voidedMicro: number
  /** What its payers got back: exactly what they paid for the voided receipts. */
  readonly refundedMicro: number
  /** The host's own receipts voided. */
  readonly receipts: number
}

/**
 * Host earnings wait in the host's escrow account for the settlement window, then move to its settled
 * (spendable) account; a host caught cheating first has all its pending earnings voided back to the
 * payers. Every move is a balanced ledger transaction committed with its receipts' new state.
 */
export class Escrow {
  private timer: NodeJS.Timeout | undefined
  private readonly ledger: Ledger

  constructor(
    private readonly store: LedgerStore,
    /** How long earnings stay pending, ms; 0: paid to the settled account at once. */
    readonly windowMs: number,
    private readonly options: { readonly releaseEveryMs?: number; readonly log?: (line: string) => void } = {},
  ) {
    this.ledger = new Ledger(store)
  }

  /** State a receipt settled now starts in. */
  get newState(): 'pending' | 'released' {
    return this.windowMs > 0 ? 'pending' : 'released'
  }

  /** Where a host's new earnings go: its escrow while a window holds them, else its settled account. */
  earningsAccount(hostId: string): string {
    return this.windowMs > 0 ? escrowAccount(hostId) : hostAccount(hostId)
  }

  /** The host's pending earnings, micro-credits. */
  pending(hostId: string): Promise<number> {
    return this.store.balance(escrowAccount(hostId))
  }

  /**
   * The most a replay may still take from a failed host's earnings in a session: what it earned there
   * less the replays already paid, and (in escrow) only what of it is still pending.
   */
  async forfeitable(session: string, failedHost: string, store: LedgerStore = this.store): Promise<number> {
    const left = await store.routes.forfeitable(session, failedHost, REPLAY_STEP_BASE)
    const held =
      this.windowMs > 0
        ? await store.escrow.pendingFrom(session, failedHost)
        : await store.balance(hostAccount(failedHost))
    return Math.max(0, Math.min(left, held))
  }

  /** Records which of the failed host's pending steps paid `micro` to a replay (call in the replay's transaction). */
  async forfeited(session: string, failedHost: string, micro: number, store: LedgerStore = this.store): Promise<void> {
    if (this.windowMs > 0 && micro > 0) await store.escrow.forfeit(session, failedHost, micro)
  }

  /** Releases, now and then, every receipt older than the window; unref'd, so it never keeps the process alive. */
  start(): void {
    if (this.timer !== undefined) return
    const every = this.options.releaseEveryMs ?? Math.min(60_000, Math.max(1000, Math.floor(this.windowMs / 4)))
    this.timer = setInterval(() => {
      this.release().catch((error: unknown) => {
        this.options.log?.(
          `releasing pending earnings failed (retried in ${every} ms): ` +
            `${error instanceof Error ? error.message : error}`,
        )
      })
    }, every)
    this.timer.unref()
  }

  close(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /**
   * Moves every receipt created at least a window before `now` to its host's settled account: one transaction per host.
   */
  release(now = Date.now()): Promise<Released> {
    const cutoff = now - this.windowMs
    return this.ledger.atomically(async (ledger) => {
      const tx = ledger.store
      let releasedMicro = 0
      let receipts = 0
      const due = await tx.escrow.due(cutoff)
      for (const { hostId, micro } of due) {
        // Unpaid receipts (no payer, a replay with nothing left to take) hold nothing: marked, no transaction.
        if (micro !== 0) await ledger.releaseEarnings(hostId, micro, now)
        receipts += await tx.escrow.markReleased(hostId, cutoff)
        releasedMicro += micro
      }
      return { releasedMicro, receipts, hosts: due.length }
    })
  }

  /**
   * Voids all of a host's pending earnings: each payer gets back exactly what it paid for those receipts
   * (the host's share and the swarm's fee), and a replay the host was paid for goes back to the failed
   * host it came from. Replays other hosts were paid out of these earnings are taken back first (the
   * session was the voided host's). Released receipts stand. Voiding again finds nothing pending.
   */
  voidHost(hostId: string, reason: string, now = Date.now()): Promise<Voided> {
    return this.ledger.atomically(async (ledger) => {
      const tx = ledger.store
      const moves: VoidMove[] = []
      const paidFromIt = await tx.escrow.pendingForfeitsFrom(hostId)
      // Only what goes back into this host's pending earnings (to be refunded): a banned host is never paid by its ban.
      for (const replay of paidFromIt) moves.push(...(await this.giveBack(tx, replay, false)))
      // Read after the give-backs: they restore what replays had taken from these receipts.
      const own = await tx.escrow.pendingOf(hostId)
      let voidedMicro = 0
      let refundedMicro = 0
      for (const r of own) {
        voidedMicro += r.earned - r.forfeited
        if (r.forfeitFrom !== null) {
          moves.push(...(await this.giveBack(tx, r)))
          continue
        }
        // What a replay that has since settled took from it (none, as
        // replays settle after the steps they repay) is not refunded.
        const refund = r.accountId === null ? 0 : r.charged - r.forfeited
        moves.push({ refund, hostId, accountId: r.accountId, held: r.earned - r.forfeited, fee: r.fee })
        refundedMicro += refund
      }
      await ledger.voidEarnings(moves, now)
      await tx.escrow.markVoided(
        paidFromIt.map((r) => r.key),
        `paid from host ${hostId}'s voided earnings: ${reason}`,
      )
      await tx.escrow.markVoided(
        own.map((r) => r.key),
        reason,
      )
      if (own.length > 0)
        this.options.log?.(
          `voided ${own.length} pending receipts of host ${hostId} (${voidedMicro} µ, ${refundedMicro} µ ` +
            `refunded): ${reason}`,
        )
      return { voidedMicro, refundedMicro, receipts: own.length }
    })
  }

  /**
   * Undoes a pending replay's pay: back to the failed host's escrow while the steps it repaid are
   * pending, and (`restAsSettled`) the rest to its settled account; without it the rest stays paid.
   */
  private async giveBack(tx: LedgerStore, replay: PendingReceipt, restAsSettled = true): Promise<VoidMove[]> {
    const from = replay.forfeitFrom
    if (from === null || replay.earned === 0) return []
    const toEscrow = await tx.escrow.unforfeit(replay.session, from, replay.earned)
    return [
      {
        replayHost: replay.hostId,
        failedHost: from,
        toEscrow,
        ...(restAsSettled ? { toSettled: replay.earned - toEscrow } : {}),
      },
    ]
  }
}
