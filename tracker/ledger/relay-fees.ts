import { verifySignature } from '../../identity/keys'
import { DEFAULT_RELAY_MICRO_PER_FRAME, REPLAY_STEP_BASE, RelayReceipt, relayReceiptMessage } from '../../protocol'
import { Ledger } from './ledger'
import type { LedgerStore } from './ledger-store'
import type { PricingOptions } from './pricing'
import type { ReceiptVerdict } from './verdicts'

/** What the relay fees of a session need to know of its issued routes. */
export interface RelayedSession {
  readonly modelId: string
  readonly accountId: string | null
  readonly hops: readonly { readonly hostId: string; readonly relayId?: string | undefined }[]
  readonly routed: { readonly maxTokens: number } | undefined
}

/** Frames one step's relay carries: the request and its answer. The tracker pays by this count, not the relay's. */
const FRAMES_PER_STEP = 2

/**
 * Pays volunteer relays per frame, like a hop per token: a relay's signed receipt for one step of a session the
 * tracker routed through it is charged to the session's payer (its credit hold covers it, ticket-office.ts) and
 * credited to the relay, less the swarm's fee; once per (session, relay, step). Steps past the session's maxTokens
 * and failover replays are not paid.
 */
export class RelayFees {
  private readonly ledger: Ledger

  constructor(
    store: LedgerStore,
    private readonly sessionOf: (session: string) => Promise<RelayedSession | undefined>,
    private readonly publicKeyOf: (hostId: string) => string | undefined | Promise<string | undefined>,
    private readonly pricing: PricingOptions & { readonly relayMicroPerFrame?: number },
    private readonly trackerKey: string | undefined,
  ) {
    this.ledger = new Ledger(store, pricing.feeBps)
  }

  async settle(relayId: string, receipts: readonly unknown[], now = Date.now()): Promise<ReceiptVerdict[]> {
    const publicKey = await this.publicKeyOf(relayId)
    const verdicts: ReceiptVerdict[] = []
    for (const raw of receipts) verdicts.push(await this.settleOne(relayId, publicKey, raw, now))
    return verdicts
  }

  private async settleOne(
    relayId: string,
    publicKey: string | undefined,
    raw: unknown,
    now: number,
  ): Promise<ReceiptVerdict> {
    const refuse = (step: number, code: string, message: string): ReceiptVerdict => ({
      hostId: relayId,
      step,
      ok: false,
      code,
      message,
      charged: 0,
    })
    const parsed = RelayReceipt.safeParse(raw)
    if (!parsed.success)
      return refuse(-1, 'bad_receipt', `not a relay receipt: ${parsed.error.issues[0]?.message ?? ''}`)
    const r = parsed.data
    const { signature, ...body } = r
    if (r.relayId !== relayId)
      return refuse(r.step, 'bad_receipt', `signed for relay ${r.relayId}; hand in only your own receipts`)
    if (publicKey === undefined || !verifySignature(publicKey, relayReceiptMessage(body), signature))
      return refuse(
        r.step,
        'bad_signature',
        `relay receipt for step ${r.step} is not signed by relay ${relayId}'s registered key`,
      )
    if (this.trackerKey !== undefined && r.tracker !== this.trackerKey)
      return refuse(r.step, 'wrong_tracker', 'the receipt names another tracker')
    const issued = await this.sessionOf(r.session)
    if (issued === undefined)
      return refuse(r.step, 'unknown_session', `the tracker issued no route for session ${r.session}`)
    if (!issued.hops.some((h) => h.hostId === r.hostId && h.relayId === relayId))
      return refuse(
        r.step,
        'route_mismatch',
        `session ${r.session} was not routed to host ${r.hostId} through relay ${relayId}`,
      )
    if (r.step >= REPLAY_STEP_BASE || r.step > (issued.routed?.maxTokens ?? 0) + 1)
      return refuse(r.step, 'not_billable', `step ${r.step} is a replay or past the session's tokens`)
    if (issued.accountId === null) return refuse(r.step, 'no_payer', `session ${r.session} has no paying account yet`)
    const charge =
      Math.min(r.frames, FRAMES_PER_STEP) * (this.pricing.relayMicroPerFrame ?? DEFAULT_RELAY_MICRO_PER_FRAME)
    const result = await this.ledger.relayFee(
      { session: r.session, relayId, step: r.step, modelId: issued.modelId, accountId: issued.accountId, charge },
      now,
    )
    if (!result.posted)
      return refuse(
        r.step,
        result.reason === 'duplicate' ? 'already_settled' : 'insufficient_credits',
        `relay step ${r.step} not charged`,
      )
    return { hostId: relayId, step: r.step, ok: true, charged: charge }
  }
}

/** What the relays of a route may charge its session at most: every step's two frames on every relayed hop. */
export function maxRelayCost(
  relayedHops: number,
  maxTokens: number,
  pricing: { readonly relayMicroPerFrame?: number },
): number {
  return relayedHops * (maxTokens + 2) * FRAMES_PER_STEP * (pricing.relayMicroPerFrame ?? DEFAULT_RELAY_MICRO_PER_FRAME)
}
