import { type KeyObject, verify } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { publicKeyObject } from '../../identity/keys'
import { DEFAULT_FEE_BPS, feeOf, type Manifest, NeuronError, REPLAY_STEP_BASE, type Receipt, Receipt as ReceiptSchema, receiptMessage } from '../../protocol'
import { consumerAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import type { LedgerStore } from './ledger-store'
import { hopCharge, type Price, type PricingOptions, priceOf } from './pricing'

/** A route the tracker issued for a session: only receipts from these hops, for these blocks, are paid. */
interface IssuedSession {
  readonly modelId: string
  readonly nLayer: number
  /** Priced once when the route is issued: looking the model up per receipt is slow. */
  readonly price: Price
  readonly hops: { readonly hostId: string; readonly blocks: readonly [number, number] }[]
  accountId: string | null
  /** The node that asked for the route: only it may hand in the session's receipts over Socket.IO. */
  readonly issuedTo: string | null
  lastUsed: number
}

export interface ReceiptVerdict {
  readonly hostId: string
  readonly step: number
  readonly ok: boolean
  /** On refusal: forged (bad_signature), replayed, route_mismatch, unknown_session, bad_receipt, insufficient_credits. */
  readonly code?: string
  readonly message?: string
  /** Micro-credits the consumer paid for this receipt. */
  readonly charged: number
}

export interface MeteringEvents {
  /** A receipt verified and settled (or refused): the reputation and dashboards listen. */
  verdict: [session: string, verdict: ReceiptVerdict, accountId: string | null, modelId: string | null]
}

/** Where the step's idempotency key comes from: one payment per session, step and span of blocks. */
export function receiptKey(r: Pick<Receipt, 'session' | 'step' | 'blocks'>): string {
  return `${r.session}:${r.step}:${r.blocks[0]}-${r.blocks[1]}`
}

const SESSION_TTL_MS = 6 * 3_600_000

/**
 * Verifies hosts' signed receipts against the routes the tracker issued, and settles each in the
 * ledger: the consumer's debit, the host's credit and the swarm's fee, once per (session, step,
 * blocks). Replay steps after a failover rebuild a cache already paid for: verified, never paid.
 */
export class Metering extends EventEmitter<MeteringEvents> {
  private readonly sessions = new Map<string, IssuedSession>()
  /** Parsed host keys: building a KeyObject costs more than checking a signature with it. */
  private readonly keys = new Map<string, KeyObject>()

  constructor(
    private readonly store: LedgerStore,
    private readonly manifestOf: (modelId: string) => Pick<Manifest, 'modelId' | 'nLayer' | 'bytesPerBlock'>,
    /** The registered public key of a host, from the tracker's records. */
    private readonly publicKeyOf: (hostId: string) => string | undefined,
    private readonly pricing: PricingOptions,
  ) {
    super()
  }

  /** Records the hops of a route issued for `session` (again after each failover: they add up). */
  issue(
    session: string,
    modelId: string,
    hops: readonly { hostId: string; blocks: readonly [number, number] }[],
    issuedTo: string | null = null,
    now = Date.now(),
  ): void {
    this.sweep(now)
    const known = this.sessions.get(session)
    if (known === undefined) {
      const manifest = this.manifestOf(modelId)
      this.sessions.set(session, {
        modelId,
        nLayer: manifest.nLayer,
        price: priceOf(manifest, this.pricing),
        hops: [...hops],
        accountId: null,
        issuedTo,
        lastUsed: now,
      })
    } else if (known.issuedTo !== issuedTo || known.modelId !== modelId) {
      throw new NeuronError('session_exists', `session ${session} belongs to another client or model; use a fresh random session id.`)
    } else {
      known.hops.push(...hops)
      known.lastUsed = now
    }
  }

  /** Charges the session's receipts to this account (the gateway's or an app's key pair); the first binding holds. */
  bind(session: string, accountId: string): void {
    const known = this.sessions.get(session)
    if (known !== undefined && known.accountId === null) known.accountId = accountId
  }

  /** The node the session's route was issued to, or undefined for a session the tracker never issued. */
  issuedTo(session: string): string | null | undefined {
    return this.sessions.get(session)?.issuedTo
  }

  forget(session: string): void {
    this.sessions.delete(session)
  }

  /** Verifies and settles receipts for `session`, in order; returns each one's verdict. */
  settle(session: string, receipts: readonly unknown[], now = Date.now()): ReceiptVerdict[] {
    // One commit for the step's receipts; each still settles (or is refused) on its own.
    const verdicts = this.store.atomically(() => receipts.map((raw) => this.settleOne(session, raw, now)))
    const issued = this.sessions.get(session)
    for (const verdict of verdicts) this.emit('verdict', session, verdict, issued?.accountId ?? null, issued?.modelId ?? null)
    return verdicts
  }

  private settleOne(session: string, raw: unknown, now: number): ReceiptVerdict {
    const parsed = ReceiptSchema.safeParse(raw)
    const claimed = typeof raw === 'object' && raw !== null && 'hostId' in raw && typeof raw.hostId === 'string' ? raw.hostId : 'unknown'
    if (!parsed.success) return this.refuse(claimed, session, null, 'bad_receipt', `not a receipt: ${parsed.error.issues[0]?.message ?? ''}`, now)
    const r = parsed.data
    const issued = this.sessions.get(session)
    if (r.session !== session)
      return this.refuse(r.hostId, session, r.step, 'route_mismatch', `receipt is for session ${r.session}, submitted for ${session}`, now)
    if (issued === undefined) return this.refuse(r.hostId, session, r.step, 'unknown_session', `the tracker issued no route for session ${session}`, now)
    if (!issued.hops.some((h) => h.hostId === r.hostId && h.blocks[0] === r.blocks[0] && h.blocks[1] === r.blocks[1])) {
      return this.refuse(
        r.hostId,
        session,
        r.step,
        'route_mismatch',
        `host ${r.hostId} blocks [${r.blocks[0]}, ${r.blocks[1]}) is not a hop the tracker issued for session ${session}`,
        now,
      )
    }
    const publicKey = this.publicKeyOf(r.hostId)
    const { signature, ...body } = r
    if (publicKey === undefined || !this.verify(publicKey, receiptMessage(body), signature)) {
      return this.refuse(r.hostId, session, r.step, 'bad_signature', `receipt for step ${r.step} is not signed by host ${r.hostId}'s registered key`, now)
    }
    issued.lastUsed = now
    const paid = r.step < REPLAY_STEP_BASE && issued.accountId !== null
    const charge = paid ? hopCharge(issued.price, issued.nLayer, r) : 0
    const fee = feeOf(charge, this.pricing.feeBps ?? DEFAULT_FEE_BPS)
    const consumer = issued.accountId === null ? null : consumerAccount(issued.accountId)
    const result = this.store.post({
      kind: 'charge',
      idempotencyKey: receiptKey(r),
      modelId: issued.modelId,
      entries:
        consumer === null
          ? []
          : [
              { account: consumer, amount: -charge },
              { account: hostAccount(r.hostId), amount: charge - fee },
              { account: FEE_ACCOUNT, amount: fee },
            ],
      ...(consumer === null ? {} : { noOverdraft: consumer }),
      receipt: { body: r, modelId: issued.modelId, accountId: issued.accountId, hostEarned: charge - fee },
      at: now,
    })
    if (!result.posted && result.reason === 'duplicate') {
      return this.refuse(r.hostId, session, r.step, 'replayed', `a receipt for step ${r.step} blocks [${r.blocks[0]}, ${r.blocks[1]}) was already settled`, now)
    }
    if (!result.posted) {
      // Not the host's fault: the consumer's credits ran out; not logged against it.
      return { hostId: r.hostId, step: r.step, ok: false, code: 'insufficient_credits', message: 'the account cannot pay for this step', charged: 0 }
    }
    return { hostId: r.hostId, step: r.step, ok: true, charged: charge }
  }

  private verify(publicKey: string, message: string, signature: string): boolean {
    try {
      let key = this.keys.get(publicKey)
      if (key === undefined) {
        key = publicKeyObject(publicKey)
        this.keys.set(publicKey, key)
      }
      return verify(null, Buffer.from(message), key, Buffer.from(signature, 'base64url'))
    } catch {
      return false
    }
  }

  private refuse(hostId: string, session: string, step: number | null, code: string, message: string, now: number): ReceiptVerdict {
    this.store.reject({ hostId, session, step, code, message, createdAt: now })
    return { hostId, step: step ?? -1, ok: false, code, message, charged: 0 }
  }

  private sweep(now: number): void {
    for (const [id, s] of this.sessions) if (now - s.lastUsed > SESSION_TTL_MS) this.sessions.delete(id)
  }
}
