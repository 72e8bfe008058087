import { randomBytes } from 'node:crypto'
import { hasGrantWork } from '../../identity/grant-work'
import {
  DEFAULT_GRANT_WORK_BITS,
  DEFAULT_GRANTS_PER_PREFIX_PER_DAY,
  GRANT_CHALLENGE_TTL_MS,
  type GrantChallenge,
  type GrantClaim,
  type GrantClaimed,
  MAX_GRANT_WORK_BITS,
  NeuronError,
} from '../../protocol'
import { MemoryNonces, type NonceBook } from '../access/auth'
import { MemoryCounter, type WindowCounter } from '../gateway/rate-limit'
import type { Accounts } from '../ledger/accounts'
import type { StoredAccount } from '../ledger/ledger-store'
import { networkPrefix } from './network-prefix'

const DAY_MS = 86_400_000

export interface NewKeyGrantOptions {
  /** Micro-credits a new key's account opens with, once, for a proof of work. */
  readonly grantMicro: number
  /** Leading zero bits the proof needs (default DEFAULT_GRANT_WORK_BITS: about a second of one core). */
  readonly bits?: number
  /** Grants one IPv4 /24 or IPv6 /48 may take per day, clock-aligned (default DEFAULT_GRANTS_PER_PREFIX_PER_DAY). */
  readonly perPrefixPerDay?: number
  /** Grants per minute over every prefix (default 30). */
  readonly perMinute?: number
}

/**
 * Grants that cost something: a key without an account asks for a single-use challenge, finds a nonce so that
 * sha256(challenge ‖ key ‖ nonce) has `bits` leading zero bits, and claims; the tracker checks it with one hash. A
 * network prefix takes at most `perPrefixPerDay` grants a day. Challenges and counts live in the cluster's shared
 * stores when there is one, so every instance spends and counts the same ones.
 */
export class NewKeyGrants {
  private readonly given: number[] = []

  constructor(
    private readonly accounts: Accounts,
    readonly options: NewKeyGrantOptions,
    private readonly challenges: NonceBook = new MemoryNonces(),
    private readonly counter: WindowCounter = new MemoryCounter(),
  ) {
    const bits = this.bits
    if (!Number.isSafeInteger(bits) || bits < 0 || bits > MAX_GRANT_WORK_BITS)
      throw new NeuronError(
        'bad_option',
        `grant work is 0 to ${MAX_GRANT_WORK_BITS} leading zero bits, not ${bits}; each bit doubles a client's work.`,
      )
  }

  get bits(): number {
    return this.options.bits ?? DEFAULT_GRANT_WORK_BITS
  }

  async challenge(now = Date.now()): Promise<GrantChallenge> {
    const expiresAt = now + GRANT_CHALLENGE_TTL_MS
    const challenge = `grant.${expiresAt}.${randomBytes(18).toString('base64url')}`
    await this.challenges.put(challenge, expiresAt, now)
    return { challenge, bits: this.bits, expiresAt, grantMicro: this.options.grantMicro }
  }

  /** Opens `publicKey`'s account with the grant, seen from `address`; a typed refusal says what to do instead. */
  async claim(
    publicKey: string,
    address: string,
    { challenge, nonce }: GrantClaim,
    now = Date.now(),
  ): Promise<GrantClaimed> {
    const expiresAt = Number(challenge.split('.')[1])
    // Spent first, whatever follows: a challenge is answered once, right or wrong.
    const issued = await this.challenges.take(challenge)
    if (expiresAt < now)
      throw new NeuronError(
        'grant_challenge_expired',
        `grant challenge expired at ${new Date(expiresAt).toISOString()}; ask grant.challenge for a fresh one.`,
      )
    if (issued === undefined)
      throw new NeuronError(
        'grant_challenge_used',
        'this grant challenge was not issued here or is already spent; ask grant.challenge for a fresh one.',
      )
    if (!hasGrantWork(challenge, publicKey, nonce, this.bits))
      throw new NeuronError(
        'grant_proof_invalid',
        `sha256(challenge, key ${publicKey.slice(0, 8)}…, nonce ${nonce}) has fewer than ${this.bits} leading zero ` +
          `bits; the challenge is spent, ask grant.challenge for a fresh one.`,
        { bits: this.bits },
      )
    if ((await this.accounts.byPublicKey(publicKey)) !== undefined)
      throw new NeuronError(
        'grant_already_given',
        `key ${publicKey.slice(0, 8)}… already has an account; a key is granted once.`,
      )
    const account = await this.open(publicKey, address, now)
    return { accountId: account.accountId, grantMicro: this.options.grantMicro }
  }

  /**
   * Opens `publicKey`'s account with the grant, within the bounds per minute and per prefix, without asking for work:
   * after a proof, or on route.plan where `bits` is 0 (a tracker that asks no work, such as one on a home network).
   */
  async open(publicKey: string, address: string, now = Date.now()): Promise<StoredAccount> {
    this.checkRate(now)
    const prefix = networkPrefix(address)
    const perDay = this.options.perPrefixPerDay ?? DEFAULT_GRANTS_PER_PREFIX_PER_DAY
    const { count, endsAt } = await this.counter.hit(`new-key-grants:${prefix}`, DAY_MS, now)
    if (count > perDay)
      throw new NeuronError(
        'grants_exhausted_prefix',
        `network ${prefix} has taken its ${perDay} new-key grants for today; try again after ` +
          `${new Date(endsAt).toISOString()} or ask the operator for an account.`,
        { retryAfterMs: endsAt - now, perPrefixPerDay: perDay },
      )
    this.given.push(now)
    // One account per key (the store's unique key): a race of two claims for one key opens one.
    return (
      await this.accounts.create(
        { publicKey, name: `key ${publicKey.slice(0, 8)}`, grantMicro: this.options.grantMicro },
        now,
      )
    ).account
  }

  /** The swarm-wide bound this instance keeps: at most `perMinute` new accounts a minute. */
  private checkRate(now: number): void {
    const perMinute = this.options.perMinute ?? 30
    while (this.given.length > 0 && now - (this.given[0] ?? now) > 60_000) this.given.shift()
    if (this.given.length >= perMinute)
      throw new NeuronError(
        'grants_exhausted',
        `this tracker opens at most ${perMinute} new accounts a minute; try again in a minute.`,
        {
          retryAfterMs: 60_000,
        },
      )
  }
}
