import type { NodeIdentity } from '../../identity/keys'
import { manifestSha256, signTicket } from '../../identity/tickets'
import { type Manifest, NeuronError, type Route, TICKET_TTL_MS } from '../../protocol'
import { CreditHolds, type Hold } from '../gateway/credit-holds'
import type { Accounts } from '../ledger/accounts'
import { consumerAccount } from '../ledger/accounts'
import type { StoredAccount } from '../ledger/ledger-store'
import { maxCost, type PricingOptions, priceOf } from '../ledger/pricing'
import type { RoutedSessions } from '../ledger/routed-sessions'

export interface TicketOfficeOptions {
  /**
   * Micro-credits a key without an account is given once, on its first route.plan (default
   * $NEURON_NEW_KEY_GRANT_MICRO); absent, such a key is refused with `no_account`.
   */
  readonly newKeyGrantMicro?: number
  /** New accounts the grant may open per minute, over all keys (default 30). */
  readonly newAccountsPerMinute?: number
  /** A private swarm's list: a key it does not admit gets no ticket (default: everyone). */
  readonly admits?: (publicKey: string) => boolean
}

/** The options as given, else from $NEURON_NEW_KEY_GRANT_MICRO; `admits`: the swarm's admission. */
export function ticketOptions(options: TicketOfficeOptions, env: NodeJS.ProcessEnv, admits?: (publicKey: string) => boolean): TicketOfficeOptions {
  const envGrant = Number(env.NEURON_NEW_KEY_GRANT_MICRO)
  const newKeyGrantMicro = options.newKeyGrantMicro ?? (Number.isSafeInteger(envGrant) && envGrant > 0 ? envGrant : undefined)
  return {
    ...(newKeyGrantMicro === undefined ? {} : { newKeyGrantMicro }),
    ...(options.newAccountsPerMinute === undefined ? {} : { newAccountsPerMinute: options.newAccountsPerMinute }),
    ...(admits === undefined ? {} : { admits }),
  }
}

/** What a routed session has set aside: the payer and what is left of its hold. */
interface HeldSession {
  readonly accountId: string
  readonly hold: Hold
  readonly maxTokens: number
  lastUsed: number
}

/** A hold nobody charged or extended for this long is released (its client is gone). */
const HOLD_IDLE_MS = 15 * 60_000

/**
 * Who may be routed, and with what: a route.plan is paid from the caller's account (or the account
 * the gateway sponsors the session for); the office sets aside a credit hold covering the session's
 * maxTokens at the model's price and signs a ticket per hop that the hop's host checks on open.
 */
export class TicketOffice {
  private readonly sessions = new Map<string, HeldSession>()
  /** Sessions the gateway runs for an account through the tracker's own client. */
  private readonly sponsored = new Map<string, string>()
  private readonly grantsGiven: number[] = []
  private readonly manifestHashes = new WeakMap<Manifest, string>()
  /** Credits set aside per account: the gateway's generations and routed sessions alike. */
  readonly holds = new CreditHolds()

  constructor(
    private readonly identity: NodeIdentity,
    private readonly accounts: Accounts,
    private readonly pricing: PricingOptions,
    /** The gateway's own client: only it may route sponsored sessions. */
    private readonly gatewayKey: string,
    /** Where holds are kept across restarts. */
    private readonly saved: RoutedSessions,
    private readonly options: TicketOfficeOptions = {},
  ) {}

  /** Holds taken before a restart come back, less what their sessions' receipts have charged since (call once before serving). */
  async restore(now = Date.now()): Promise<void> {
    for (const h of await this.saved.holds()) {
      const remaining = Math.max(0, h.heldMicro - (await this.saved.charged(h.session, consumerAccount(h.accountId))))
      this.sessions.set(h.session, { accountId: h.accountId, hold: this.holds.hold(h.accountId, remaining), maxTokens: h.maxTokens, lastUsed: now })
    }
    this.sweep(now)
  }

  /** The gateway runs `session` for `accountId` (it holds the credits itself). */
  sponsor(session: string, accountId: string): void {
    this.sponsored.set(session, accountId)
  }

  /**
   * The account that pays for `session` asked by `publicKey`: the sponsored account for the
   * gateway's own client, else the key's own (opened with the new-key grant when the tracker gives
   * one). Throws `no_account` otherwise.
   */
  async payer(session: string, publicKey: string, now = Date.now()): Promise<{ account: StoredAccount; sponsored: boolean }> {
    if (this.options.admits?.(publicKey) === false)
      throw new NeuronError('not_admitted', `this is a private swarm and key ${publicKey.slice(0, 8)}… is not on its list; ask the operator to add it.`)
    const sponsoredBy = publicKey === this.gatewayKey ? this.sponsored.get(session) : undefined
    if (sponsoredBy !== undefined) {
      const account = await this.accounts.get(sponsoredBy)
      if (account !== undefined) return { account, sponsored: true }
    }
    const own = await this.accounts.byPublicKey(publicKey)
    if (own !== undefined) return { account: own, sponsored: false }
    return { account: await this.openWithGrant(publicKey, now), sponsored: false }
  }

  /**
   * Sets aside credits for `session` (once: a failover's re-plan reuses the hold) and signs each
   * hop's ticket. Throws `insufficient_credits` when the account's balance less its holds cannot
   * cover `maxTokens` at the model's price.
   */
  async ticket(
    route: Route,
    request: { session: string; maxTokens: number; promptTokens?: number | undefined },
    manifest: Manifest,
    clientKey: string,
    payer: { account: StoredAccount; sponsored: boolean },
    now = Date.now(),
  ): Promise<Route> {
    // Read first: from here on nothing awaits until the hold is taken, so two plans of one account cannot both spend the same credits.
    const unread = payer.sponsored || this.sessions.has(request.session)
    const balance = unread ? 0 : await this.accounts.balance(payer.account.accountId)
    this.sweep(now)
    const price = priceOf(manifest, this.pricing)
    const known = this.sessions.get(request.session)
    if (known !== undefined) {
      if (known.accountId !== payer.account.accountId)
        throw new NeuronError('session_exists', `session ${request.session} is another client's; use a fresh random session id.`)
      if (request.maxTokens > known.maxTokens)
        throw new NeuronError(
          'ticket_mismatch',
          `session ${request.session} was routed for ${known.maxTokens} tokens; a re-plan cannot ask for ${request.maxTokens}.`,
        )
      known.lastUsed = now
    } else if (!payer.sponsored) {
      // Its session was swept meanwhile: read the balance after all.
      if (unread) return this.ticket(route, request, manifest, clientKey, payer, now)
      const prompt = Math.min(request.promptTokens ?? 0, request.maxTokens)
      const cost = maxCost(price, manifest.nLayer, prompt, request.maxTokens - prompt)
      const { accountId } = payer.account
      const available = balance - this.holds.heldMicro(accountId)
      if (available < cost) {
        throw new NeuronError(
          'insufficient_credits',
          `account ${accountId} has ${available} micro-credits free; a session of ${request.maxTokens} tokens of ${manifest.modelId} may cost ${cost}. Ask for fewer tokens or for a grant.`,
          { availableMicro: available, neededMicro: cost },
        )
      }
      this.sessions.set(request.session, { accountId, hold: this.holds.hold(accountId, cost), maxTokens: request.maxTokens, lastUsed: now })
      await this.saved.saveHold({ session: request.session, accountId, heldMicro: cost, maxTokens: request.maxTokens, createdAt: now })
    }
    const manifestHash = this.hashOf(manifest)
    return {
      ...route,
      hops: route.hops.map((hop) => ({
        ...hop,
        ticket: signTicket(this.identity, {
          session: request.session,
          clientKey,
          hostId: hop.hostId,
          blocks: hop.blocks,
          maxTokens: request.maxTokens,
          // Undeclared, the whole session may be prompt: the tracker then counts the host's figure, bounded by maxTokens.
          promptTokens: Math.min(request.promptTokens ?? request.maxTokens, request.maxTokens),
          modelId: manifest.modelId,
          manifestSha256: manifestHash,
          price,
          expiresAt: now + TICKET_TTL_MS,
        }),
      })),
    }
  }

  /** A settled receipt spent `micro` of the session's hold. */
  charged(session: string, micro: number, now = Date.now()): void {
    const held = this.sessions.get(session)
    if (held === undefined) return
    held.hold.remaining = Math.max(0, held.hold.remaining - micro)
    held.lastUsed = now
    this.holds.emit('changed', held.accountId)
  }

  /** `session.end` from `publicKey`: ends the session if that key's account (or the gateway) routed it; the rpc's empty answer. */
  async endBy(session: string, publicKey: string): Promise<Record<string, never>> {
    const held = this.sessions.get(session)
    const own = held !== undefined && (await this.accounts.byPublicKey(publicKey))?.accountId === held.accountId
    if (own || (publicKey === this.gatewayKey && this.sponsored.has(session))) this.end(session)
    return {}
  }

  /** The session is over: what is left of its hold is free again. */
  end(session: string): void {
    const held = this.sessions.get(session)
    this.sponsored.delete(session)
    if (held === undefined) return
    this.sessions.delete(session)
    this.holds.release(held.accountId, held.hold)
    // Not awaited: a hold left stored by a failed delete comes back at the next start less what was charged, and is swept again when idle.
    this.saved.releaseHold(session).catch(() => {})
  }

  /** The account paying for a routed session, if the office holds for it. */
  accountOf(session: string): string | undefined {
    return this.sessions.get(session)?.accountId ?? this.sponsored.get(session)
  }

  private async openWithGrant(publicKey: string, now: number): Promise<StoredAccount> {
    const grant = this.options.newKeyGrantMicro
    if (grant === undefined || grant <= 0) {
      throw new NeuronError(
        'no_account',
        `key ${publicKey.slice(0, 8)}… has no account on this tracker; ask the operator for one (neuron account create) or use a tracker that grants new keys.`,
      )
    }
    const perMinute = this.options.newAccountsPerMinute ?? 30
    while (this.grantsGiven.length > 0 && now - (this.grantsGiven[0] ?? now) > 60_000) this.grantsGiven.shift()
    if (this.grantsGiven.length >= perMinute) {
      throw new NeuronError('grants_exhausted', `this tracker opens at most ${perMinute} new accounts a minute; try again in a minute.`, {
        retryAfterMs: 60_000,
      })
    }
    this.grantsGiven.push(now)
    // One account per key (the store's unique key): a key gets the grant once.
    return (await this.accounts.create({ publicKey, name: `key ${publicKey.slice(0, 8)}`, grantMicro: grant }, now)).account
  }

  private hashOf(manifest: Manifest): string {
    let hash = this.manifestHashes.get(manifest)
    if (hash === undefined) {
      hash = manifestSha256(manifest)
      this.manifestHashes.set(manifest, hash)
    }
    return hash
  }

  /** Releases the holds of sessions idle past HOLD_IDLE_MS (their client is gone); settled receipts stay paid. */
  sweep(now = Date.now()): void {
    for (const [id, s] of this.sessions) if (now - s.lastUsed > HOLD_IDLE_MS) this.end(id)
  }
}
