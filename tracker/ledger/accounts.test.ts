// Accounts on a real SQLite file and a real PostgreSQL database: found by hashed API key or an app's public key,
// their keys replaced and revoked at once.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { Accounts, consumerAccount } from './accounts'

let store: TrackerStore
let accounts: Accounts

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`accounts on ${engine.name}`, () => {
    engine.setUp()
    beforeEach(async () => {
      store = await (await engine.fresh()).open()
      accounts = new Accounts(store, 1_000_000)
    })
    afterEach(async () => {
      await store.close()
    })

    it('keeps accounts by hashed API key and by an app’s public key', async () => {
      const app = NodeIdentity.generate()
      const created = await accounts.create({ name: 'app', publicKey: app.publicKey })
      expect(created.apiKey).toMatch(/^nk-/)
      expect((await accounts.byApiKey(created.apiKey))?.accountId).toBe(created.account.accountId)
      expect(await accounts.byApiKey(`${created.apiKey}x`)).toBeUndefined()
      expect((await accounts.byPublicKey(app.publicKey))?.accountId).toBe(created.account.accountId)
      expect(await store.ledger.balance(consumerAccount(created.account.accountId))).toBe(1_000_000)
      await expect(accounts.create({ publicKey: app.publicKey })).rejects.toThrow(/already has an account/)
    })

    it('replaces an account’s API keys with a new one, and revokes them, at once', async () => {
      const created = await accounts.create({ name: 'app' })
      const other = await accounts.create({ name: 'other' })
      const replaced = await accounts.replaceKey(created.account.accountId)
      expect(await accounts.byApiKey(created.apiKey)).toBeUndefined()
      expect((await accounts.byApiKey(replaced))?.accountId).toBe(created.account.accountId)
      await accounts.revokeKeys(created.account.accountId)
      expect(await accounts.byApiKey(replaced)).toBeUndefined()
      expect((await accounts.byApiKey(other.apiKey))?.accountId).toBe(other.account.accountId)
      await expect(accounts.replaceKey('acct_none')).rejects.toThrow(/no account acct_none/)
    })
  })
