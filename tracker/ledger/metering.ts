import { type KeyObject, verify } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { publicKeyObject } from '../../identity/keys'
import {
  DEFAULT_FEE_BPS,
  feeOf,
  type Manifest,
  NeuronError,
  NodeId,
  REPLAY_STEP_BASE,
  Receipt as ReceiptSchema,
  receiptMessage,
} from '../../protocol'
import { consumerAccount, escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import { Escrow, settlementWindowMs } from './escrow'
import type { IssuedSession } from './issued-session'
import type { LedgerStore } from './ledger-store'
import { type PricingOptions, priceOf } from './pricing'
import { checkTerms, clientSignedStep, type RoutedTokens, receiptKey, seamBreaks, stepCharge } from './receipt-terms'
import { RelayFees } from './relay-fees'
import { settleReplay } from './replays'

export type { IssuedSession } from './issued-session'

import type { MeteringEvents, ReceiptVerdict } from './verdicts'

export { receiptKey } from './receipt-terms'
export { type MeteringEvents, type ReceiptVerdict, wireVerdicts } from './verdicts'

/** A route the tracker issued for a session: only receipts from these hops, for these blocks, are paid. */

const SESSION_TTL_MS = 6 * 3_600_000
/**
 * Hops one session's routes may add up to, failovers included:
 * a client asking again and again must not grow it without end.
 */
const MAX_SESSION_HOPS = 4096

/**
 * Verifies hosts' signed receipts against the routes the tracker issued, and settles each in the
 * ledger: the consumer's debit, the host's credit (pending in its escrow for the settlement window)
 * and the swarm's fee, once per (session, step, blocks). Replay steps after a failover rebuild a
 * cache already paid for: the consumer pays nothing, the failed host's earnings pay the replay.
 */
export class Metering extends EventEmitter<MeteringEvents> {
  /** Host earnings pending for the settlement window: released by its timer, voided when a host is caught cheating. */
  readonly escrow: Escrow
  /** Volunteer relays' fees per frame, from the same sessions' holds. */
  readonly relayFees: RelayFees
  private readonly sessions = new Map<string, IssuedSession>()
  /** Parsed host keys: building a KeyObject costs more than checking a signature with it. */
  private readonly keys = new Map<string, KeyObject>()
  /** Other tracker instances write the same store (tracker/cluster/): routes are read from it, not from memory. */
  shared = false

  constructor(
    private readonly store: LedgerStore,
    private readonly manifestOf: (modelId: string) => Pick<Manifest, 'modelId' | 'nLayer' | 'bytesPerBlock'>,
    /** The registered public key of a host, from the tracker's records. */
    private readonly publicKeyOf: (hostId: string) => string | undefined | Promise<string | undefined>,
    private readonly pricing: PricingOptions,
    /** This tracker's key: receipts must name it (absent in ledger-only tests). */
    private readonly trackerKey?: string,
    /** How long host earnings stay pending (default $NEURON_SETTLEMENT_WINDOW_MS, else 24 h; 0: paid at once). */
    settlement: { readonly settlementWindowMs?: number | undefined } = {},
    /** Hosts the checks banned: their receipts are refused (whatever they ran, they ran as liars). */
    private readonly banned: (hostId: string) => boolean = () => false,
  ) {
    super()
    this.escrow = new Escrow(store, settlementWindowMs(settlement.settlementWindowMs))
    this.escrow.start()
    this.relayFees = new RelayFees(store, (session) => this.lookup(session), publicKeyOf, pricing, trackerKey)
  }

  /** Stops the escrow's release timer. */
  close(): void {
    this.escrow.close()
  }

  /**
   * Records the hops of a route issued for `session` (again after each failover: they add up).
   * Returns whether the failure the request reports is believed: the failed host must have been a
   * hop the tracker issued for that span of this session, and not be on the new route.
   */
  async issue(
    session: string,
    modelId: string,
    hops: readonly { hostId: string; blocks: readonly [number, number]; relayId?: string }[],
    issuedTo: string | null = null,
    now = Date.now(),
    /**
     * What route.plan declared; with `failedHost` and `span`, the hop
     * the client gave up on (believed only if the tracker issued it).
     */
    request?: RoutedTokens & {
      failedHost?: string | undefined
      span?: readonly [number, number] | undefined
      accountId?: string
      clientKey?: string
    },
  ): Promise<boolean> {
    const routed =
      request === undefined ? undefined : { maxTokens: request.maxTokens, promptTokens: request.promptTokens }
    const failed =
      request?.failedHost === undefined || request.span === undefined
        ? undefined
        : { hostId: request.failedHost, blocks: request.span }
    await this.sweep(now)
    // read again after the awaits: another route.plan for this
    // new session may have set it meanwhile (its hops must stay)
    const known = (await this.lookup(session)) ?? this.sessions.get(session)
    let believed = false
    if (known === undefined) {
      const manifest = this.manifestOf(modelId)
      const issued: IssuedSession = {
        modelId,
        nLayer: manifest.nLayer,
        price: priceOf(manifest, this.pricing),
        hops: [...hops],
        accountId: null,
        issuedTo,
        clientKey: request?.clientKey ?? null,
        routed,
        failed: [],
        lastUsed: now,
      }
      this.sessions.set(session, issued)
      await this.save(session, issued, now)
    } else if (known.issuedTo !== issuedTo || known.modelId !== modelId) {
      throw new NeuronError(
        'session_exists',
        `session ${session} belongs to another client or model; use a fresh random session id.`,
      )
    } else if (known.hops.length + hops.length > MAX_SESSION_HOPS) {
      throw new NeuronError(
        'too_many_routes',
        `session ${session} has been routed ${known.hops.length} hops already; start a new session.`,
      )
    } else {
      const f = failed
      believed =
        f !== undefined &&
        known.hops.some((h) => h.hostId === f.hostId && h.blocks[0] === f.blocks[0] && h.blocks[1] === f.blocks[1]) &&
        !hops.some((h) => h.hostId === f.hostId)
      if (believed && f !== undefined) known.failed.push(f)
      known.hops.push(...hops)
      known.lastUsed = now
      await this.save(session, known, now)
    }
    // The account that pays: the route's caller's (or the one the gateway runs the session for).
    if (request?.accountId !== undefined) await this.bind(session, request.accountId)
    return believed
  }

  /** Charges the session's receipts to this account (the gateway's or an app's key pair); the first binding holds. */
  async bind(session: string, accountId: string): Promise<void> {
    const known = await this.lookup(session)
    if (known !== undefined && known.accountId === null) {
      known.accountId = accountId
      await this.save(session, known)
    }
  }

  /** The node the session's route was issued to, or undefined for a session the tracker never issued. */
  async issuedTo(session: string): Promise<string | null | undefined> {
    return (await this.lookup(session))?.issuedTo
  }

  /**
   * The model and hops the tracker issued for `session` (failovers add up), or undefined for a session it never issued.
   */
  async route(
    session: string,
  ): Promise<{ modelId: string; hops: readonly { hostId: string; blocks: readonly [number, number] }[] } | undefined> {
    const known = await this.lookup(session)
    return known === undefined ? undefined : { modelId: known.modelId, hops: known.hops }
  }

  forget(session: string): void {
    this.sessions.delete(session)
  }

  /** Verifies and settles receipts for `session`, in order; returns each one's verdict. */
  async settle(session: string, receipts: readonly unknown[], now = Date.now()): Promise<ReceiptVerdict[]> {
    const issued = await this.lookup(session)
    // Read before the transaction (it may only touch the database
    // through its own handle): the signers' registered keys.
    const keys = new Map<string, string | undefined>()
    for (const raw of receipts) {
      const hostId = ReceiptSchema.safeParse(raw).data?.hostId
      if (hostId !== undefined && !keys.has(hostId)) keys.set(hostId, await this.publicKeyOf(hostId))
    }
    // One commit for the step's receipts; each still settles (or
    // is refused) on its own. Seams are told once it commits.
    let seams: [number, string][] = []
    const verdicts = await this.store.atomically(async (tx) => {
      seams = []
      const settled: ReceiptVerdict[] = []
      for (const raw of receipts) settled.push(await this.settleOne(tx, session, issued, keys, raw, now, seams))
      return settled
    })
    for (const [step, message] of seams) this.emit('seam', session, step, message)
    for (const verdict of verdicts) {
      if (verdict.code === 'already_settled') continue
      const own = issued?.issuedTo !== null && issued?.issuedTo === verdict.hostId
      this.emit(
        'verdict',
        session,
        own ? { ...verdict, selfServed: true } : verdict,
        issued?.accountId ?? null,
        issued?.modelId ?? null,
      )
    }
    return verdicts
  }

  /** Settles receipts a host hands in itself, session by session; one signed by another host is refused. */
  async settleFromHost(hostId: string, receipts: readonly unknown[], now = Date.now()): Promise<ReceiptVerdict[]> {
    const bySession = new Map<string, unknown[]>()
    const verdicts: ReceiptVerdict[] = []
    for (const raw of receipts) {
      const r = ReceiptSchema.safeParse(raw)
      if (!r.success || r.data.hostId !== hostId) {
        const why = r.success
          ? `it is signed by host ${r.data.hostId}; hand in only your own receipts`
          : (r.error.issues[0]?.message ?? '')
        verdicts.push(
          await this.refuse(
            this.store,
            hostId,
            null,
            r.success ? r.data.step : null,
            'bad_receipt',
            `not this host's receipt: ${why}`,
            now,
          ),
        )
        continue
      }
      bySession.set(r.data.session, [...(bySession.get(r.data.session) ?? []), raw])
    }
    // One commit per session; each verdict carries the balances after its own receipt for the dashboards.
    for (const [session, list] of bySession) verdicts.push(...(await this.settle(session, list, now)))
    return verdicts
  }

  private async settleOne(
    tx: LedgerStore,
    session: string,
    issued: IssuedSession | undefined,
    keys: ReadonlyMap<string, string | undefined>,
    raw: unknown,
    now: number,
    seams: [number, string][],
  ): Promise<ReceiptVerdict> {
    const parsed = ReceiptSchema.safeParse(raw)
    // Named back in the verdict only when it is a node id: a claim of any other shape is a peer's arbitrary text.
    const claimed =
      typeof raw === 'object' && raw !== null && 'hostId' in raw && NodeId.safeParse(raw.hostId).success
        ? String(raw.hostId)
        : 'unknown'
    if (!parsed.success)
      return this.refuse(
        tx,
        claimed,
        session,
        null,
        'bad_receipt',
        `not a receipt: ${parsed.error.issues[0]?.message ?? ''}`,
        now,
      )
    const r = parsed.data
    if (r.session !== session)
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'route_mismatch',
        `receipt is for session ${r.session}, submitted for ${session}`,
        now,
      )
    if (issued === undefined)
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'unknown_session',
        `the tracker issued no route for session ${session}`,
        now,
      )
    const publicKey = keys.get(r.hostId)
    const { signature, ...body } = r
    const signed = publicKey !== undefined && this.verify(publicKey, receiptMessage(body), signature)
    if (!issued.hops.some((h) => h.hostId === r.hostId && h.blocks[0] === r.blocks[0] && h.blocks[1] === r.blocks[1])) {
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'route_mismatch',
        `host ${r.hostId} blocks [${r.blocks[0]}, ${r.blocks[1]}) is not a hop the tracker issued for session ` +
          `${session}`,
        now,
        signed,
      )
    }
    if (!signed) {
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'bad_signature',
        `receipt for step ${r.step} is not signed by host ${r.hostId}'s registered key`,
        now,
      )
    }
    if (this.banned(r.hostId))
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'banned_host',
        `host ${r.hostId} is banned; nothing it hands in is paid`,
        now,
      )
    // a step the client never sent has no client signature: its receipt is the host's claim alone
    if (issued.clientKey !== null && !clientSignedStep(issued.clientKey, r))
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        'no_client_signature',
        `step ${r.step} carries no signature of the session's client; only steps a client sent are paid`,
        now,
        true,
      )
    issued.lastUsed = now
    const terms = checkTerms(issued, r, this.trackerKey)
    // A step at a position other than its ticket's: the client
    // chose the position, the host only signed it; no host's fault.
    if (terms !== undefined)
      return this.refuse(
        tx,
        r.hostId,
        session,
        r.step,
        terms.code,
        terms.message,
        now,
        terms.code !== 'position_mismatch',
      )
    if (r.step >= REPLAY_STEP_BASE) {
      const feeBps = this.pricing.feeBps ?? DEFAULT_FEE_BPS
      return settleReplay(
        {
          tx,
          escrow: this.escrow,
          feeBps,
          balancesAfter: (hostId, accountId) => this.balancesAfter(tx, hostId, accountId),
        },
        session,
        issued,
        r,
        now,
      )
    }
    for (const message of await seamBreaks(tx, session, issued.hops, r)) seams.push([r.step, message])
    const paid = r.step < REPLAY_STEP_BASE && issued.accountId !== null
    // Paid by the tracker's own count of the step's tokens, never the host's claim.
    const charge = paid ? stepCharge(issued, r) : 0
    const fee = feeOf(charge, this.pricing.feeBps ?? DEFAULT_FEE_BPS)
    const consumer = issued.accountId === null ? null : consumerAccount(issued.accountId)
    const result = await tx.post({
      kind: 'charge',
      idempotencyKey: receiptKey(r),
      modelId: issued.modelId,
      entries:
        consumer === null
          ? []
          : [
              { account: consumer, amount: -charge },
              { account: this.escrow.earningsAccount(r.hostId), amount: charge - fee },
              { account: FEE_ACCOUNT, amount: fee },
            ],
      ...(consumer === null ? {} : { noOverdraft: consumer }),
      receipt: {
        body: r,
        modelId: issued.modelId,
        accountId: issued.accountId,
        hostEarned: charge - fee,
        charged: charge,
        fee,
        escrow: this.escrow.newState,
      },
      at: now,
    })
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
      balances: await this.balancesAfter(tx, r.hostId, issued.accountId),
    }
  }

  /** Three indexed reads of the running balances: cheap beside the commit they ride in. */
  private async balancesAfter(
    tx: LedgerStore,
    hostId: string,
    accountId: string | null,
  ): Promise<NonNullable<ReceiptVerdict['balances']>> {
    const account = accountId === null ? null : await tx.balance(consumerAccount(accountId))
    return { host: await tx.balance(hostAccount(hostId)), pending: await tx.balance(escrowAccount(hostId)), account }
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

  /** Records a refused receipt (the host's dashboard lists it); `fault` says whether it counts against the host. */
  private async refuse(
    tx: LedgerStore,
    hostId: string,
    session: string | null,
    step: number | null,
    code: string,
    message: string,
    now: number,
    fault = false,
  ): Promise<ReceiptVerdict> {
    await tx.reject({ hostId, session, step, code, message, createdAt: now })
    return { hostId, step: step ?? -1, ok: false, code, message, charged: 0, fault }
  }

  private async sweep(now: number): Promise<void> {
    for (const [id, s] of this.sessions) if (now - s.lastUsed > SESSION_TTL_MS) this.sessions.delete(id)
    await this.store.routes.forgetRoutesBefore(now - SESSION_TTL_MS)
  }

  /** The session as issued: from memory, else as saved before a restart. */
  private async lookup(session: string): Promise<IssuedSession | undefined> {
    const known = this.sessions.get(session)
    // With other instances on the same store, another may have routed the session since: the store has the last word.
    if (known !== undefined && !this.shared) return known
    const saved = await this.store.routes.route(session)
    if (saved === undefined) return undefined
    let nLayer: number
    try {
      nLayer = this.manifestOf(saved.modelId).nLayer
    } catch {
      return undefined
    }
    // Another caller may have restored it while this one read.
    const fromStore = { ...saved, nLayer, hops: [...saved.hops], failed: [...saved.failed], lastUsed: Date.now() }
    const restored: IssuedSession = (this.shared ? undefined : this.sessions.get(session)) ?? fromStore
    this.sessions.set(session, restored)
    return restored
  }

  /**
   * Writes `s`, the object the caller changed: a lookup meanwhile (shared mode) may have put another copy in the map.
   */
  private async save(session: string, s: IssuedSession, now = Date.now()): Promise<void> {
    await this.store.routes.saveRoute({
      session,
      modelId: s.modelId,
      issuedTo: s.issuedTo,
      clientKey: s.clientKey,
      accountId: s.accountId,
      routed: s.routed,
      hops: s.hops,
      failed: s.failed,
      price: s.price,
      savedAt: now,
    })
  }
}
