import { randomBytes } from 'node:crypto'
import { NeuronError } from '../../protocol'
import type { TrackerStore } from '../db/store'
import { consumerAccount } from './account-names'
import { Ledger } from './ledger'
import type { StoredAccount } from './ledger-store'

// The ledger's account names, reached here by the rest of the tracker and its tests.
export { consumerAccount, escrowAccount, FEE_ACCOUNT, GRANTS_ACCOUNT, hostAccount } from './account-names'

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
  private readonly ledger: Ledger

  constructor(
    /** The tracker's store (TrackerStore): its ledger, its API keys, and the two written together for a new account. */
    private readonly store: Pick<TrackerStore, 'ledger' | 'apiKeys' | 'openAccount'>,
    private readonly startingGrantMicro: number,
  ) {
    this.ledger = new Ledger(store.ledger)
  }

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
    if (options.publicKey != null && (await this.store.ledger.accountByPublicKey(options.publicKey)) !== undefined) {
      throw new NeuronError('account_exists', `key ${options.publicKey.slice(0, 8)}… already has an account.`)
    }
    await this.store.openAccount(account, apiKey)
    const grantMicro = options.grantMicro ?? this.startingGrantMicro
    if (grantMicro > 0) await this.grant(accountId, grantMicro, now)
    return { account, apiKey, grantMicro }
  }

  /** Credits an account from the swarm's grants account (which goes negative: credits issued). */
  async grant(accountId: string, micro: number, now = Date.now()): Promise<void> {
    if (!Number.isSafeInteger(micro) || micro <= 0)
      throw new NeuronError('bad_request', `a grant is a positive whole number of micro-credits, not ${micro}.`)
    if ((await this.store.ledger.getAccount(accountId)) === undefined)
      throw new NeuronError('unknown_account', `no account ${accountId}.`)
    await this.ledger.grant(accountId, micro, now)
  }

  /** A new key for the account, replacing every key it had (shown once: only its sha256 is stored). */
  async replaceKey(accountId: string, now = Date.now()): Promise<string> {
    if ((await this.store.ledger.getAccount(accountId)) === undefined)
      throw new NeuronError('unknown_account', `no account ${accountId}.`)
    const apiKey = newApiKey()
    await this.store.apiKeys.replace(accountId, apiKey, now)
    return apiKey
  }

  /** Revokes every key of the account: requests with one get 401 invalid_api_key from then on. */
  revokeKeys(accountId: string, now = Date.now()): Promise<void> {
    return this.store.apiKeys.replace(accountId, null, now)
  }

  get(accountId: string): Promise<StoredAccount | undefined> {
    return this.store.ledger.getAccount(accountId)
  }

  byApiKey(key: string): Promise<StoredAccount | undefined> {
    return this.store.apiKeys.accountOf(key)
  }

  byPublicKey(publicKey: string): Promise<StoredAccount | undefined> {
    return this.store.ledger.accountByPublicKey(publicKey)
  }

  balance(accountId: string): Promise<number> {
    return this.store.ledger.balance(consumerAccount(accountId))
  }
}
