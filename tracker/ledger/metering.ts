import { EventEmitter } from 'node:events'
import {
  ChainedReceipt,
  type Manifest,
  NeuronError,
  REPLAY_STEP_BASE,
  Receipt as ReceiptSchema,
  type SessionTurn,
} from '../../protocol'
import { Escrow, settlementWindowMs } from './escrow'
import type { IssuedSession } from './issued-session'
import { Ledger } from './ledger'
import type { LedgerStore } from './ledger-store'
import { type PricingOptions, priceOf } from './pricing'
import type { RoutedTokens } from './receipt-terms'
import { RelayFees } from './relay-fees'
import { refuse, StepCheck } from './step-check'
import { payStep } from './step-pay'
import type { MeteringEvents, ReceiptVerdict } from './verdicts'

// The verdicts' types and wire form, reached here by the RPC handlers.
export { type MeteringEvents, type ReceiptVerdict, wireVerdicts } from './verdicts'

const SESSION_TTL_MS = 6 * 3_600_000
/**
 * Hops one session's routes may add up to, failovers included:
 * a client asking again and again must not grow it without end.
 */
const MAX_SESSION_HOPS = 4096
/** Turns one conversation's session may take (route.turn): each is kept with the session's route. */
export const MAX_SESSION_TURNS = 1024

/**
 * Keeps the routes the tracker issued, and settles hosts' signed receipts against them: each is checked
 * (step-check.ts), then paid (step-pay.ts) in the ledger: the consumer's debit, the host's credit (pending in
 * its escrow for the settlement window) and the swarm's fee, once per (session, step, blocks). Replay steps after a
 * failover rebuild a cache already paid for: the consumer pays nothing, the failed host's earnings pay the replay.
 */
export class Metering extends EventEmitter<MeteringEvents> {
  /** Host earnings pending for the settlement window: released by its timer, voided when a host is caught cheating. */
  readonly escrow: Escrow
  /** Volunteer relays' fees per frame, from the same sessions' holds. */
  readonly relayFees: RelayFees
  private readonly sessions = new Map<string, IssuedSession>()
  private readonly ledger: Ledger
  private readonly steps: StepCheck
  /** Other tracker instances write the same store (tracker/cluster/): routes are read from it, not from memory. */
  shared = false

  constructor(
    private readonly store: LedgerStore,
    private readonly manifestOf: (modelId: string) => Pick<Manifest, 'modelId' | 'nLayer' | 'bytesPerBlock'>,
    /** The registered public key of a host, from the tracker's records. */
    private readonly publicKeyOf: (hostId: string) => string | undefined | Promise<string | undefined>,
    private readonly pricing: PricingOptions,
    /** This tracker's key: receipts must name it (absent in ledger-only tests). */
    trackerKey?: string,
    /** How long host earnings stay pending (default $NEURON_SETTLEMENT_WINDOW_MS, else 24 h; 0: paid at once). */
    settlement: { readonly settlementWindowMs?: number | undefined } = {},
    /** Hosts the checks banned: their receipts are refused (whatever they ran, they ran as liars). */
    private readonly banned: (hostId: string) => boolean = () => false,
  ) {
    super()
    this.ledger = new Ledger(store, pricing.feeBps)
    this.steps = new StepCheck(trackerKey, banned)
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
    hops: readonly { hostId: string; blocks: readonly [number, number]; relayId?: string; standby?: string[] }[],
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
      request === undefined
        ? undefined
        : {
            maxTokens: request.maxTokens,
            promptTokens: request.promptTokens,
            ...(request.fork === undefined
              ? {}
              : { fork: { session: request.fork.session, position: request.fork.position } }),
          }
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
   * The model and hops the tracker issued for `session` (failovers add up), the client it issued them to and what
   * route.plan declared; undefined for a session it never issued.
   */
  async route(session: string): Promise<
    | {
        modelId: string
        hops: readonly { hostId: string; blocks: readonly [number, number]; standby?: readonly string[] }[]
        issuedTo: string | null
        routed: RoutedTokens | undefined
      }
    | undefined
  > {
    const known = await this.lookup(session)
    return known === undefined
      ? undefined
      : { modelId: known.modelId, hops: known.hops, issuedTo: known.issuedTo, routed: known.routed }
  }

  /**
   * Records a conversation's next turn on `session` (route.turn) for `nodeId`, the client it was routed to: the turn
   * must come after the last one and end within the session's maxTokens, and every hop it names must be one the
   * tracker routed for the session, with its blocks. Returns what the session was routed for, the turn added.
   */
  async addTurn(
    session: string,
    nodeId: string,
    turn: SessionTurn,
    hops: readonly { hostId: string; blocks: readonly [number, number] }[],
  ): Promise<RoutedTokens> {
    const known = await this.lookup(session)
    if (known === undefined || known.issuedTo !== nodeId || known.routed === undefined)
      throw new NeuronError(
        'unknown_session',
        `the tracker routed you no session ${session}; plan a route (route.plan) for the conversation first.`,
      )
    const routed = known.routed
    const last = routed.turns?.at(-1) ?? { step: 1, position: 0 }
    if (turn.step <= last.step || turn.position <= last.position || turn.step >= REPLAY_STEP_BASE)
      throw new NeuronError(
        'turn_out_of_order',
        `a turn at step ${turn.step}, position ${turn.position} does not come after the session's last (step ` +
          `${last.step}, position ${last.position}); number a turn's first step after the last step sent.`,
      )
    if (turn.position + turn.tokens > routed.maxTokens)
      throw new NeuronError(
        'turn_too_long',
        `a turn of ${turn.tokens} tokens at position ${turn.position} passes the ${routed.maxTokens} positions ` +
          `session ${session} was routed for; start a new session for a longer conversation.`,
        { maxTokens: routed.maxTokens },
      )
    if ((routed.turns?.length ?? 0) >= MAX_SESSION_TURNS)
      throw new NeuronError(
        'too_many_turns',
        `session ${session} has had ${MAX_SESSION_TURNS} turns, the most one session may; start a new one.`,
      )
    for (const hop of hops)
      if (
        !known.hops.some(
          (h) => h.hostId === hop.hostId && h.blocks[0] === hop.blocks[0] && h.blocks[1] === hop.blocks[1],
        )
      )
        throw new NeuronError(
          'not_on_route',
          `host ${hop.hostId} [${hop.blocks[0]}, ${hop.blocks[1]}) is not a hop the tracker routed for session ` +
            `${session}; a turn goes on only on the session's own hops.`,
        )
    known.routed = { ...routed, turns: [...(routed.turns ?? []), turn] }
    known.lastUsed = Date.now()
    await this.save(session, known)
    return known.routed
  }

  /** What `session` was routed for, its conversation's turns included; undefined for a session never routed. */
  async routed(session: string): Promise<RoutedTokens | undefined> {
    return (await this.lookup(session))?.routed
  }

  forget(session: string): void {
    this.sessions.delete(session)
  }

  /** Checks each receipt for `session` (step-check.ts) and pays it (step-pay.ts), in order; returns their verdicts. */
  async settle(session: string, receipts: readonly unknown[], now = Date.now()): Promise<ReceiptVerdict[]> {
    const issued = await this.lookup(session)
    // Read before the transaction (it may only touch the database
    // through its own handle): the signers' registered keys.
    const keys = new Map<string, string | undefined>()
    for (const raw of receipts) {
      const chain = ChainedReceipt.safeParse(raw).data?.chain
      const signers = [ReceiptSchema.safeParse(raw).data?.hostId, chain?.origin.hostId, chain?.prev.hostId]
      for (const hostId of signers)
        if (hostId !== undefined && !keys.has(hostId)) keys.set(hostId, await this.publicKeyOf(hostId))
    }
    // One commit for the step's receipts; each still settles (or
    // is refused) on its own. Seams are told once it commits.
    let seams: [number, string][] = []
    const verdicts = await this.ledger.atomically(async (ledger) => {
      seams = []
      const settled: ReceiptVerdict[] = []
      for (const raw of receipts) {
        const checked = await this.steps.check(ledger.store, session, issued, keys, raw, now)
        if ('refused' in checked) {
          settled.push(await refuse(ledger.store, checked.refused, now))
          continue
        }
        for (const message of checked.seams) seams.push([checked.payable.step, message])
        settled.push(
          await payStep(ledger, this.escrow, session, checked.issued, checked.payable, now, this.pricing.standbyBps),
        )
      }
      return settled
    })
    for (const [step, message] of seams) this.emit('seam', session, step, message)
    // A host banned while these settled: the ban's void ran beside this transaction and did not see them (an audit
    // ends after its session, as the session's receipts come in). What it was just paid goes back too.
    for (const hostId of new Set(verdicts.filter((v) => v.ok && this.banned(v.hostId)).map((v) => v.hostId)))
      await this.escrow.voidHost(hostId, 'banned while its receipts settled')
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
        const step = r.success ? r.data.step : null
        const message = `not this host's receipt: ${why}`
        verdicts.push(
          await refuse(this.store, { hostId, session: null, step, code: 'bad_receipt', message, fault: false }, now),
        )
        continue
      }
      bySession.set(r.data.session, [...(bySession.get(r.data.session) ?? []), raw])
    }
    // One commit per session; each verdict carries the balances after its own receipt for the dashboards.
    for (const [session, list] of bySession) verdicts.push(...(await this.settle(session, list, now)))
    return verdicts
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
