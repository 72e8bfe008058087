/** Micro-credits one generation in flight has set aside and not yet spent; settling lowers `remaining`. */
export interface Hold {
  remaining: number
}

/** Micro-credits set aside for generations in flight, per account: they cannot be spent twice. */
export class CreditHolds {
  private readonly byAccount = new Map<string, Set<Hold>>()

  /** Sets `micro` aside for one generation until `release`. */
  hold(accountId: string, micro: number): Hold {
    const hold = { remaining: micro }
    const holds = this.byAccount.get(accountId) ?? new Set()
    holds.add(hold)
    this.byAccount.set(accountId, holds)
    return hold
  }

  release(accountId: string, hold: Hold): void {
    const holds = this.byAccount.get(accountId)
    if (holds === undefined) return
    holds.delete(hold)
    if (holds.size === 0) this.byAccount.delete(accountId)
  }

  /** Micro-credits the account's generations in flight have set aside and not yet spent. */
  heldMicro(accountId: string): number {
    let held = 0
    for (const h of this.byAccount.get(accountId) ?? []) held += h.remaining
    return held
  }
}
