import { DEFAULT_FEE_BPS, feeOf, type Receipt } from '../../protocol'
import { consumerAccount, escrowAccount, FEE_ACCOUNT, GRANTS_ACCOUNT, hostAccount } from './account-names'
import type { EscrowState } from './escrowed-receipts'
import type { Entry, PostResult } from './ledger-posting'
import type { LedgerStore } from './ledger-store'

/** Where a step's idempotency key comes from: one payment per session, step and span of blocks. */
export function receiptKey(r: Pick<Receipt, 'session' | 'step' | 'blocks'>): string {
  return `${r.session}:${r.step}:${r.blocks[0]}-${r.blocks[1]}`
}

/**
 * Where a host's new earnings go (Escrow): its escrow account, the receipt 'pending', while a settlement window
 * holds them; else its settled account, the receipt 'released'.
 */
export interface HostEarnings {
  earningsAccount(hostId: string): string
  readonly newState: EscrowState
}

/** A host's step paid by its session's payer, recorded with its receipt. */
export interface StepCharge {
  readonly receipt: Receipt
  readonly modelId: string
  /** The account that pays (null: nobody does; the receipt is recorded and nothing moves). */
  readonly accountId: string | null
  /** What the consumer pays, micro-credits: the swarm's fee comes out of it, the host earns the rest. */
  readonly charge: number
  readonly earnings: HostEarnings
  /** The twins' standby fees out of the host's share, each to its settled account (standby.ts). */
  readonly standby?: readonly (readonly [string, number])[]
}

/** A replay after a failover, paid first from the failed host's earnings in the session, then by the consumer. */
export interface ReplayPay {
  readonly receipt: Receipt
  readonly modelId: string
  readonly accountId: string | null
  /** The host the client failed over from, and what of its earnings moves to the replaying host (0: none). */
  readonly failedHost: string | undefined
  readonly moved: number
  /** What the consumer pays for the rest (0: nothing). */
  readonly charge: number
  readonly earnings: HostEarnings
}

/**
 * One move of a void (Escrow.voidHost), in the order it is taken: a pending receipt refunded to its payer (the
 * host's share and the swarm's fee), or a replay's pay given back to the failed host it came from (to its escrow,
 * and `toSettled`, when given, to its settled account).
 */
export type VoidMove =
  | {
      readonly refund: number
      readonly hostId: string
      readonly accountId: string | null
      /** What of the receipt's earnings the host still holds in escrow. */
      readonly held: number
      readonly fee: number
    }
  | {
      readonly replayHost: string
      readonly failedHost: string
      readonly toEscrow: number
      readonly toSettled?: number
    }

/**
 * The one place a credit is written: a method per kind of write, each building its balanced entries (who is debited,
 * who credited, the swarm's fee), its idempotency key and its receipt record; the store below checks and commits.
 */
export class Ledger {
  constructor(
    /** The store, bound to the transaction `atomically` opened when this ledger came from it: read through it. */
    readonly store: LedgerStore,
    /** The swarm's fee out of what a consumer pays, basis points. */
    readonly feeBps: number = DEFAULT_FEE_BPS,
  ) {}

  /** The swarm's fee out of `micro`. */
  fee(micro: number): number {
    return feeOf(micro, this.feeBps)
  }

  /**
   * Runs `fn` with a ledger whose writes commit together in one database transaction (LedgerStore.atomically: on
   * PostgreSQL `fn` may run again, so it reads and writes only through the ledger it is handed).
   */
  atomically<T>(fn: (ledger: Ledger) => Promise<T>): Promise<T> {
    return this.store.atomically((tx) => fn(new Ledger(tx, this.feeBps)))
  }

  /** Credits an account from the swarm's grants account (which goes negative: credits issued). */
  grant(accountId: string, micro: number, at: number): Promise<PostResult> {
    return this.store.post({
      kind: 'grant',
      idempotencyKey: null,
      modelId: null,
      entries: [
        { account: GRANTS_ACCOUNT, amount: -micro },
        { account: consumerAccount(accountId), amount: micro },
      ],
      at,
    })
  }

  /**
   * Charges a hop's step to its payer, never past zero: the consumer's debit, the host's earnings and the swarm's fee,
   * once per (session, step, blocks); the receipt is recorded with what was charged, so a void can refund exactly it.
   */
  chargeStep(c: StepCharge, at: number): Promise<PostResult> {
    const r = c.receipt
    const fee = this.fee(c.charge)
    const consumer = c.accountId === null ? null : consumerAccount(c.accountId)
    const standby = consumer === null ? [] : standbyWithin(c.standby ?? [], c.charge - fee)
    const standbyTotal = standby.reduce((sum, [, share]) => sum + share, 0)
    const earned = c.charge - fee - standbyTotal
    return this.store.post({
      kind: 'charge',
      idempotencyKey: receiptKey(r),
      modelId: c.modelId,
      entries:
        consumer === null
          ? []
          : merged([
              { account: consumer, amount: -c.charge },
              { account: c.earnings.earningsAccount(r.hostId), amount: earned },
              { account: FEE_ACCOUNT, amount: fee },
              ...standby.map(([twin, share]) => ({ account: hostAccount(twin), amount: share })),
            ]),
      ...(consumer === null ? {} : { noOverdraft: consumer }),
      receipt: {
        body: r,
        modelId: c.modelId,
        accountId: c.accountId,
        hostEarned: earned,
        charged: c.charge,
        // what a void takes back from the swarm's fee account: its fee and the twins' standby shares, so the payer is
        // refunded in full while the twins keep theirs (standby.ts)
        fee: fee + standbyTotal,
        escrow: c.earnings.newState,
      },
      at,
    })
  }

  /**
   * Pays a replay: `moved` from the failed host's earnings to the replaying host's (a forfeit), and the consumer's
   * `charge` for the rest, less the swarm's fee; once per (session, step, blocks), recorded with its receipt.
   */
  payReplay(p: ReplayPay, at: number): Promise<PostResult> {
    const r = p.receipt
    const consumer = p.accountId === null ? null : consumerAccount(p.accountId)
    const fee = this.fee(p.charge)
    const entries = [
      ...(p.failedHost === undefined || p.moved === 0
        ? []
        : [
            { account: p.earnings.earningsAccount(p.failedHost), amount: -p.moved },
            { account: p.earnings.earningsAccount(r.hostId), amount: p.moved },
          ]),
      ...(consumer === null || p.charge === 0
        ? []
        : [
            { account: consumer, amount: -p.charge },
            { account: p.earnings.earningsAccount(r.hostId), amount: p.charge - fee },
            { account: FEE_ACCOUNT, amount: fee },
          ]),
    ]
    return this.store.post({
      kind: p.charge > 0 ? 'charge' : 'forfeit',
      idempotencyKey: receiptKey(r),
      modelId: p.modelId,
      entries,
      ...(consumer === null || p.charge === 0 ? {} : { noOverdraft: consumer }),
      receipt: {
        body: r,
        modelId: p.modelId,
        accountId: p.accountId,
        hostEarned: p.moved + p.charge - fee,
        ...(p.charge > 0 ? { charged: p.charge, fee } : {}),
        escrow: p.earnings.newState,
        ...(p.moved > 0 ? { forfeitFrom: p.failedHost } : {}),
      },
      at,
    })
  }

  /** Moves `micro` of a host's pending earnings from its escrow to its settled account. */
  releaseEarnings(hostId: string, micro: number, at: number): Promise<PostResult> {
    return this.store.post({
      kind: 'release',
      idempotencyKey: null,
      modelId: null,
      entries: [
        { account: escrowAccount(hostId), amount: -micro },
        { account: hostAccount(hostId), amount: micro },
      ],
      at,
    })
  }

  /** Takes back a host's pending earnings in one transaction, move by move (nothing to post when no move has legs). */
  async voidEarnings(moves: readonly VoidMove[], at: number): Promise<PostResult | undefined> {
    const entries = moves.flatMap(voidEntries)
    if (entries.length === 0) return undefined
    return this.store.post({ kind: 'void', idempotencyKey: null, modelId: null, entries: merged(entries), at })
  }

  /**
   * Charges a session's rent once, when its hold ends: `owed` per host holding its cache, each paid less the swarm's
   * fee, from the consumer's balance, never below zero.
   */
  rent(
    r: { session: string; modelId: string; accountId: string; owed: readonly (readonly [string, number])[] },
    at: number,
  ): Promise<PostResult> {
    const consumer = consumerAccount(r.accountId)
    let total = 0
    const entries: Entry[] = []
    for (const [hostId, owed] of r.owed) {
      const fee = this.fee(owed)
      total += owed
      entries.push({ account: hostAccount(hostId), amount: owed - fee }, { account: FEE_ACCOUNT, amount: fee })
    }
    return this.store.post({
      kind: 'rent',
      idempotencyKey: `rent:${r.session}`,
      modelId: r.modelId,
      entries: [{ account: consumer, amount: -total }, ...entries],
      noOverdraft: consumer,
      at,
    })
  }

  /** Pays a volunteer relay for one step of a session it carried, from the session's payer, less the swarm's fee. */
  relayFee(
    f: { session: string; relayId: string; step: number; modelId: string; accountId: string; charge: number },
    at: number,
  ): Promise<PostResult> {
    const fee = this.fee(f.charge)
    const consumer = consumerAccount(f.accountId)
    return this.store.post({
      kind: 'charge',
      idempotencyKey: `relay:${f.session}:${f.relayId}:${f.step}`,
      modelId: f.modelId,
      entries: [
        { account: consumer, amount: -f.charge },
        { account: hostAccount(f.relayId), amount: f.charge - fee },
        { account: FEE_ACCOUNT, amount: fee },
      ],
      noOverdraft: consumer,
      at,
    })
  }
}

function voidEntries(m: VoidMove): Entry[] {
  if ('refund' in m) {
    const refunded: Entry[] = [
      { account: escrowAccount(m.hostId), amount: -m.held },
      { account: FEE_ACCOUNT, amount: -m.fee },
    ]
    if (m.accountId !== null) refunded.push({ account: consumerAccount(m.accountId), amount: m.refund })
    return refunded
  }
  return [
    { account: escrowAccount(m.replayHost), amount: -(m.toEscrow + (m.toSettled ?? 0)) },
    { account: escrowAccount(m.failedHost), amount: m.toEscrow },
    ...(m.toSettled === undefined ? [] : [{ account: hostAccount(m.failedHost), amount: m.toSettled }]),
  ]
}

/** Standby shares only while they fit in the host's share (a standby fee above it pays no twin: a bad setting). */
function standbyWithin(
  shares: readonly (readonly [string, number])[],
  hostShare: number,
): readonly (readonly [string, number])[] {
  return shares.reduce((sum, [, share]) => sum + share, 0) <= hostShare ? shares : []
}

/** One leg per account: a void touches the same accounts many times. */
function merged(entries: readonly Entry[]): Entry[] {
  const by = new Map<string, number>()
  for (const e of entries) by.set(e.account, (by.get(e.account) ?? 0) + e.amount)
  return [...by].map(([account, amount]) => ({ account, amount }))
}
