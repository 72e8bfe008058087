import type { NodeIdentity } from '../../identity/keys'
import { manifestSha256, signTicket } from '../../identity/tickets'
import { type Manifest, NeuronError, type Route, type SessionTurn, TICKET_TTL_MS, type Ticket } from '../../protocol'
import type { NonceBook } from '../access/auth'
import type { WindowCounter } from '../gateway/rate-limit'
import type { Accounts } from '../ledger/accounts'
import type { CreditHolds } from '../ledger/credit-holds'
import type { StoredAccount } from '../ledger/ledger-store'
import { maxCost, type PricingOptions, priceOf } from '../ledger/pricing'
import { maxRelayCost } from '../ledger/relay-fees'
import { rentPerMinute } from '../ledger/rent'
import { NewKeyGrants } from './new-key-grants'
import { MAX_PLANS_PER_KEY, type TicketOfficeOptions } from './ticket-options'

export { MAX_PLANS_PER_KEY, type TicketOfficeOptions, ticketOptions } from './ticket-options'

/**
 * Who may be routed, and with what: a route.plan is paid from the caller's account (or the account
 * the gateway sponsors the session for); the office sets aside a credit hold covering the session's
 * maxTokens at the model's price and signs a ticket per hop that the hop's host checks on open.
 */
export class TicketOffice {
  /** Sessions the gateway runs for an account through the tracker's own client. */
  private readonly sponsored = new Map<string, string>()
  /** New keys' grants, for a proof of work; undefined when this tracker gives none. */
  readonly grants: NewKeyGrants | undefined
  private readonly manifestHashes = new WeakMap<Manifest, string>()
  private sweeper: NodeJS.Timeout | undefined

  constructor(
    private readonly identity: NodeIdentity,
    private readonly accounts: Accounts,
    private readonly pricing: PricingOptions,
    /** The gateway's own client: only it may route sponsored sessions. */
    private readonly gatewayKey: string,
    /**
     * Credits set aside per account, in the store every instance
     * shares: the gateway's generations and routed sessions alike.
     */
    private readonly holds: CreditHolds,
    private readonly options: TicketOfficeOptions = {},
    /** Where grant challenges and per-prefix counts live: the cluster's shared stores, else this process. */
    shared: { challenges?: NonceBook; counter?: WindowCounter } = {},
  ) {
    const grantMicro = options.newKeyGrantMicro
    this.grants =
      grantMicro === undefined || grantMicro <= 0
        ? undefined
        : new NewKeyGrants(
            accounts,
            {
              grantMicro,
              ...(options.grantWorkBits === undefined ? {} : { bits: options.grantWorkBits }),
              ...(options.grantsPerPrefixPerDay === undefined
                ? {}
                : { perPrefixPerDay: options.grantsPerPrefixPerDay }),
              ...(options.newAccountsPerMinute === undefined ? {} : { perMinute: options.newAccountsPerMinute }),
            },
            shared.challenges,
            shared.counter,
          )
  }

  /**
   * Releases the holds of sessions idle past HOLD_IDLE_MS, whichever instance took them (their client is gone), each
   * charged its rent up to its last activity; settled receipts stay paid.
   */
  async sweep(now = Date.now()): Promise<number> {
    const rent = this.options.rent
    if (rent !== undefined)
      for (const { hold, lastActive } of await this.holds.idle(now)) await rent.charge(hold, lastActive)
    return this.holds.sweep(now)
  }

  /** Sweeps every minute until `close`. */
  start(log: (line: string) => void): void {
    this.sweeper ??= setInterval(
      () => void this.sweep().catch((e: Error) => log(`sweeping idle credit holds failed: ${e.message}`)),
      60_000,
    )
    this.sweeper.unref()
  }

  close(): void {
    clearInterval(this.sweeper)
  }

  /** New keys' grants (grant.challenge, grant.claim); `no_grants` where this tracker gives none. */
  grantsOrRefuse(): NewKeyGrants {
    if (this.grants !== undefined) return this.grants
    throw new NeuronError(
      'no_grants',
      'this tracker grants new keys nothing; ask the operator for an account (neuron account create).',
    )
  }

  /** The gateway runs `session` for `accountId` (it holds the credits itself). */
  sponsor(session: string, accountId: string): void {
    this.sponsored.set(session, accountId)
  }

  /**
   * The account that pays for `session` asked by `publicKey`: the sponsored account for the gateway's own client, else
   * the key's own. A key without one is refused: `grant_unclaimed` where the tracker grants new keys (the client claims
   * with a proof of work and asks again; no account is opened without one, so a refused key may still claim later),
   * `no_account` otherwise. A tracker that asks 0 bits of work opens it with the grant at once, within the bounds.
   */
  async payer(
    session: string,
    publicKey: string,
    address: string,
    now = Date.now(),
  ): Promise<{ account: StoredAccount; sponsored: boolean }> {
    if (this.options.admits?.(publicKey) === false)
      throw new NeuronError(
        'not_admitted',
        `this is a private swarm and key ${publicKey.slice(0, 8)}… is not on its list; ask the operator to add it.`,
      )
    const sponsoredBy = publicKey === this.gatewayKey ? this.sponsored.get(session) : undefined
    if (sponsoredBy !== undefined) {
      const account = await this.accounts.get(sponsoredBy)
      if (account !== undefined) return { account, sponsored: true }
    }
    const own = await this.accounts.byPublicKey(publicKey)
    if (own !== undefined) return { account: own, sponsored: false }
    // A tracker that asks no work opens the account on the first plan, as far as the per-prefix bound allows.
    if (this.grants?.bits === 0) return { account: await this.grants.open(publicKey, address, now), sponsored: false }
    if (this.grants !== undefined)
      throw new NeuronError(
        'grant_unclaimed',
        `key ${publicKey.slice(0, 8)}… has no account yet; this tracker grants a new key ` +
          `${this.grants.options.grantMicro} micro-credits for a proof of work: ask grant.challenge, find the ` +
          `nonce, send grant.claim (the neuron client does this itself), then plan again.`,
        { bits: this.grants.bits, grantMicro: this.grants.options.grantMicro },
      )
    throw new NeuronError(
      'no_account',
      `key ${publicKey.slice(0, 8)}… has no account on this tracker; ask the operator for one (neuron account ` +
        `create) or use a tracker that grants new keys.`,
    )
  }

  /**
   * Sets aside credits for `session` (once: a failover's re-plan, on any instance, reuses the hold) and
   * signs each hop's ticket. Throws `insufficient_credits` when the account's balance less its holds
   * cannot cover `maxTokens` at the model's price. A failover plan (`request.failedHost`) gets failover tickets: they
   * allow replays of the session's positions, paid from the failed host's escrow first, then by the payer.
   */
  async ticket(
    route: Route,
    request: {
      session: string
      maxTokens: number
      promptTokens?: number | undefined
      failedHost?: string | undefined
      /** A failover within a conversation's turn: the replacement takes the turn's first step too. */
      turn?: SessionTurn | undefined
      /** Prefix affinity (prefix-affinity.ts): each hop starts the session from this one's cache. */
      fork?: { session: string; position: number } | undefined
    },
    manifest: Manifest,
    clientKey: string,
    payer: { account: StoredAccount; sponsored: boolean },
    now = Date.now(),
  ): Promise<Route> {
    const price = priceOf(manifest, this.pricing)
    // The gateway holds for the sessions it sponsors itself.
    if (!payer.sponsored) {
      const prompt = Math.min(request.promptTokens ?? 0, request.maxTokens)
      const relayed = route.hops.filter((h) => h.via !== undefined).length
      // a fork's copied positions are neither prefilled nor paid: only those after them may cost
      const copied = Math.min(request.fork?.position ?? 0, request.maxTokens - prompt)
      const cost =
        maxCost(price, manifest.nLayer, prompt, request.maxTokens - prompt - copied) +
        maxRelayCost(relayed, request.maxTokens, this.pricing)
      await this.hold(request, manifest.modelId, cost, payer.account.accountId, now)
    }
    return {
      ...route,
      hops: route.hops.map((hop, i) => ({
        ...hop,
        ticket: this.sign(
          hop,
          request,
          manifest,
          clientKey,
          payer.account.accountId,
          now,
          this.upstream(route, i),
          request.turn,
        ),
      })),
    }
  }

  /**
   * A conversation's next turn on `session` (route.turn): a ticket per hop, on the session's terms, naming the turn.
   * The session's hold must still be the payer's (a turn after session.end, or after the hold idled out, is refused):
   * it is touched, so an active conversation's hold does not idle out.
   */
  async turnTickets(
    hops: readonly { hostId: string; blocks: readonly [number, number] }[],
    request: { session: string; maxTokens: number; promptTokens?: number | undefined },
    turn: SessionTurn,
    manifest: Manifest,
    clientKey: string,
    payer: { account: StoredAccount; sponsored: boolean },
    now = Date.now(),
  ): Promise<Ticket[]> {
    const accountId = payer.account.accountId
    if (!payer.sponsored) {
      const hold = await this.holds.get(request.session)
      if (hold === undefined || hold.accountId !== accountId)
        throw new NeuronError(
          'session_ended',
          `session ${request.session} has ended (or idled out) and holds no credits; start a new conversation.`,
        )
      await this.holds.take(request.session, accountId, () => hold, now)
    }
    return hops.map((hop, i) =>
      this.sign(hop, request, manifest, clientKey, accountId, now, this.upstream({ hops }, i), turn),
    )
  }

  /** The hops before hop `i` with their keys, for its ticket; undefined for the first, or a key not known. */
  private upstream(route: { readonly hops: readonly { readonly hostId: string }[] }, i: number): Ticket['upstream'] {
    const keyOf = this.options.keyOf
    if (i === 0 || keyOf === undefined) return undefined
    const hops = route.hops.slice(0, i).map((h) => ({ hostId: h.hostId, publicKey: keyOf(h.hostId) }))
    return hops.every((h): h is { hostId: string; publicKey: string } => h.publicKey !== undefined) ? hops : undefined
  }

  /**
   * Failover tickets for hops already on the session's route (`issued`) whose caches a failover rebuilds: each must be
   * one the tracker issued for this session, with the same blocks, and not the failed host.
   */
  rebuildTickets(
    rebuild: readonly { hostId: string; blocks: readonly [number, number] }[],
    issued: readonly { hostId: string; blocks: readonly [number, number] }[],
    request: {
      session: string
      maxTokens: number
      promptTokens?: number | undefined
      failedHost: string
      turn?: SessionTurn | undefined
    },
    manifest: Manifest,
    clientKey: string,
    payer: { account: StoredAccount },
    now = Date.now(),
  ): Ticket[] {
    return rebuild.map((hop) => {
      if (
        hop.hostId === request.failedHost ||
        !issued.some((h) => h.hostId === hop.hostId && h.blocks[0] === hop.blocks[0] && h.blocks[1] === hop.blocks[1])
      )
        throw new NeuronError(
          'not_on_route',
          `host ${hop.hostId} [${hop.blocks[0]}, ${hop.blocks[1]}) is not a live hop of session ` +
            `${request.session}; ask to rebuild only the hops of your route after the failed one.`,
        )
      return this.sign(hop, request, manifest, clientKey, payer.account.accountId, now, undefined, request.turn)
    })
  }

  /** One hop's ticket; a failover plan's (with `failedHost`) names the replay span and who pays for it. */
  private sign(
    hop: { hostId: string; blocks: readonly [number, number] },
    request: {
      session: string
      maxTokens: number
      promptTokens?: number | undefined
      failedHost?: string | undefined
      fork?: { session: string; position: number } | undefined
    },
    manifest: Manifest,
    clientKey: string,
    accountId: string,
    now: number,
    upstream?: Ticket['upstream'],
    /** The conversation's turn the ticket is for (route.turn, or a failover within a turn). */
    turn?: SessionTurn,
  ): Ticket {
    const blocks: [number, number] = [hop.blocks[0], hop.blocks[1]]
    return signTicket(this.identity, {
      session: request.session,
      clientKey,
      hostId: hop.hostId,
      blocks,
      maxTokens: request.maxTokens,
      // Undeclared, the whole session may be prompt: the tracker then counts the host's figure, bounded by maxTokens.
      promptTokens: Math.min(request.promptTokens ?? request.maxTokens, request.maxTokens),
      modelId: manifest.modelId,
      manifestSha256: this.hashOf(manifest),
      price: priceOf(manifest, this.pricing),
      rentMicroPerMinute: rentPerMinute(manifest, blocks, request.maxTokens, this.pricing),
      expiresAt: now + TICKET_TTL_MS,
      // every position the session may hold: the tracker cannot know how far it got before the failure
      ...(request.failedHost === undefined
        ? {}
        : { replay: { span: [0, request.maxTokens], escrowOf: request.failedHost, thenAccount: accountId } }),
      // a failed-over route is client-relayed: its tickets take no forwarded step
      ...(upstream === undefined || request.failedHost !== undefined ? {} : { upstream }),
      ...(turn === undefined ? {} : { turn }),
      ...(request.fork === undefined
        ? {}
        : { fork: { session: request.fork.session, position: request.fork.position } }),
    })
  }

  /**
   * `session.end` from `publicKey`: releases the session's hold if that key's account took it; the rpc's empty answer.
   */
  async endBy(session: string, publicKey: string): Promise<Record<string, never>> {
    // The gateway releases its generation's hold itself, once the last receipts are settled.
    if (publicKey === this.gatewayKey && this.sponsored.delete(session)) return {}
    const hold = await this.holds.get(session)
    if (hold === undefined || (await this.accounts.byPublicKey(publicKey))?.accountId !== hold.accountId) return {}
    // Rent first: a hold released is no longer there to say how long the session held its hosts.
    await this.options.rent?.charge(hold, Date.now())
    await this.holds.release(session)
    return {}
  }

  /**
   * Takes the session's hold of `cost`, or checks a re-plan
   * against the hold its first plan took (on whichever instance).
   */
  private async hold(
    request: { session: string; maxTokens: number },
    modelId: string,
    cost: number,
    accountId: string,
    now: number,
  ): Promise<void> {
    const size = (available: number) => {
      if (available < cost) {
        throw new NeuronError(
          'insufficient_credits',
          `account ${accountId} has ${available} micro-credits free; a session of ${request.maxTokens} tokens of ` +
            `${modelId} may cost ${cost}. Ask for fewer tokens or for a grant.`,
          { availableMicro: available, neededMicro: cost },
        )
      }
      return { heldMicro: cost, maxTokens: request.maxTokens }
    }
    const { hold, taken } = await this.holds.take(
      request.session,
      accountId,
      size,
      now,
      this.options.maxPlansPerKey ?? MAX_PLANS_PER_KEY,
    )
    if (taken) return
    if (hold.accountId !== accountId)
      throw new NeuronError(
        'session_exists',
        `session ${request.session} is another client's; use a fresh random session id.`,
      )
    if (request.maxTokens > hold.maxTokens)
      throw new NeuronError(
        'ticket_mismatch',
        `session ${request.session} was routed for ${hold.maxTokens} tokens; a re-plan cannot ask for ` +
          `${request.maxTokens}.`,
      )
  }

  private hashOf(manifest: Manifest): string {
    let hash = this.manifestHashes.get(manifest)
    if (hash === undefined) {
      hash = manifestSha256(manifest)
      this.manifestHashes.set(manifest, hash)
    }
    return hash
  }
}
