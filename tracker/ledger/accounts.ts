import { createHash, randomBytes } from 'node:crypto'
import { NeuronError } from '../../protocol'
import type { LedgerStore, StoredAccount } from './ledger-store'

/** The ledger account names: a consumer, a host (settled and in escrow), the swarm's fee and where grants come from. */
export const consumerAccount = (accountId: string) => `consumer:${accountId}`
/** A host's settled earnings: spendable. */
export const hostAccount = (hostId: string) => `host:${hostId}`
/**
 * A host's pending earnings: held for the settlement window,
 * then released to hostAccount (or voided back to its payers).
 */
export const escrowAccount = (hostId: string) => `escrow:${hostId}`
export const FEE_ACCOUNT = 'swarm:fee'
export const GRANTS_ACCOUNT = 'swarm:grants'

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

function newApiKey(): string {
  return `nk-${randomBytes(24).toString('base64url')}`
}

export interface CreatedAccount {
  readonly account: StoredAccount
  /** Shown once: only its sha256 is stored. */
  readonly apiKey: string
  readonly grantMicro: number
}

/** Accounts with API keys (`nk-…`, stored hashed) or an app's key pair, and their starting grant. */
export class Accounts {
  constructor(
    private readonly store: LedgerStore,
    private readonly startingGrantMicro: number,
  ) {}

  async create(
    options: { name?: string; grantMicro?: number; publicKey?: string | null } = {},
    now = Date.now(),
  ): Promise<CreatedAccount> {
    const accountId = `acct_${randomBytes(8).toString('hex')}`
    const apiKey = newApiKey()
    const account: StoredAccount = {
      accountId,
      name: options.name ?? accountId,
      publicKey: options.publicKey ?? null,
      createdAt: now,
    }
    if (options.publicKey != null && (await this.store.accountByPublicKey(options.publicKey)) !== undefined) {
      throw new NeuronError('account_exists', `key ${options.publicKey.slice(0, 8)}… already has an account.`)
    }
    await this.store.createAccount(account, hashApiKey(apiKey))
    const grantMicro = options.grantMicro ?? this.startingGrantMicro
    if (grantMicro > 0) await this.grant(accountId, grantMicro, now)
    return { account, apiKey, grantMicro }
  }

  /** Credits an account from the swarm's grants account (which goes negative: credits issued). */
  async grant(accountId: string, micro: number, now = Date.now()): Promise<void> {
    if (!Number.isSafeInteger(micro) || micro <= 0)
      throw new NeuronError('bad_request', `a grant is a positive whole number of micro-credits, not ${micro}.`)
    if ((await this.store.getAccount(accountId)) === undefined)
      throw new NeuronError('unknown_account', `no account ${accountId}.`)
    await this.store.post({
      kind: 'grant',
      idempotencyKey: null,
      modelId: null,
      entries: [
        { account: GRANTS_ACCOUNT, amount: -micro },
        { account: consumerAccount(accountId), amount: micro },
      ],
      at: now,
    })
  }

  /** A new key for the account, replacing every key it had (shown once: only its sha256 is stored). */
  async replaceKey(accountId: string, now = Date.now()): Promise<string> {
    if ((await this.store.getAccount(accountId)) === undefined)
      throw new NeuronError('unknown_account', `no account ${accountId}.`)
    const apiKey = newApiKey()
    await this.store.replaceApiKeys(accountId, hashApiKey(apiKey), now)
    return apiKey
  }

  /** Revokes every key of the account: requests with one get 401 invalid_api_key from then on. */
  revokeKeys(accountId: string, now = Date.now()): Promise<void> {
    return this.store.replaceApiKeys(accountId, null, now)
  }

  get(accountId: string): Promise<StoredAccount | undefined> {
    return this.store.getAccount(accountId)
  }

  byApiKey(key: string): Promise<StoredAccount | undefined> {
    return this.store.accountByKeyHash(hashApiKey(key))
  }

  byPublicKey(publicKey: string): Promise<StoredAccount | undefined> {
    return this.store.accountByPublicKey(publicKey)
  }

  balance(accountId: string): Promise<number> {
    return this.store.balance(consumerAccount(accountId))
  }
}
