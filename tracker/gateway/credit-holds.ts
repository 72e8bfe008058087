import { EventEmitter } from 'node:events'

/** Micro-credits one generation in flight has set aside and not yet spent; settling lowers `remaining`. */
export interface Hold {
  remaining: number
}

/** How long another instance's word on an account's holds counts without being said again (it repeats it every minute). */
export const REMOTE_HOLD_TTL_MS = 180_000

/**
 * Micro-credits set aside for generations in flight, per account: they cannot be spent twice. With
 * several tracker instances (tracker/cluster/), each tells the others its own total per account when it
 * changes (`changed`), and counts theirs too, so one account's sessions on two instances cannot both
 * spend the same credits.
 */
export class CreditHolds extends EventEmitter<{ changed: [accountId: string] }> {
  private readonly byAccount = new Map<string, Set<Hold>>()
  /** Other instances' totals: account → instance → micro-credits, and when it was said. */
  private readonly remote = new Map<string, Map<string, { micro: number; at: number }>>()

  /** Sets `micro` aside for one generation until `release`. */
  hold(accountId: string, micro: number): Hold {
    const hold = { remaining: micro }
    const holds = this.byAccount.get(accountId) ?? new Set()
    holds.add(hold)
    this.byAccount.set(accountId, holds)
    this.emit('changed', accountId)
    return hold
  }

  release(accountId: string, hold: Hold): void {
    const holds = this.byAccount.get(accountId)
    if (holds === undefined) return
    holds.delete(hold)
    if (holds.size === 0) this.byAccount.delete(accountId)
    this.emit('changed', accountId)
  }

  /** Micro-credits the account's generations in flight have set aside and not yet spent, on every instance. */
  heldMicro(accountId: string, now = Date.now()): number {
    let held = this.ownMicro(accountId)
    for (const r of this.remote.get(accountId)?.values() ?? []) if (now - r.at < REMOTE_HOLD_TTL_MS) held += r.micro
    return held
  }

  /** What this instance alone holds for the account. */
  ownMicro(accountId: string): number {
    let held = 0
    for (const h of this.byAccount.get(accountId) ?? []) held += h.remaining
    return held
  }

  /** Accounts this instance holds credits for now. */
  accounts(): string[] {
    return [...this.byAccount.keys()]
  }

  /** Another instance's total for an account; 0 forgets it. */
  setRemote(instance: string, accountId: string, micro: number, now = Date.now()): void {
    const byInstance = this.remote.get(accountId) ?? new Map<string, { micro: number; at: number }>()
    if (micro > 0) byInstance.set(instance, { micro, at: now })
    else byInstance.delete(instance)
    for (const [i, r] of byInstance) if (now - r.at >= REMOTE_HOLD_TTL_MS) byInstance.delete(i)
    if (byInstance.size === 0) this.remote.delete(accountId)
    else this.remote.set(accountId, byInstance)
  }
}
