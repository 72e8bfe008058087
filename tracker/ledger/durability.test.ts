// The ledger's commits are durable: WAL with a full fsync per commit, so a power cut after a grant or
// a settled receipt cannot take it back (with synchronous=NORMAL, WAL may lose the last commits).
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { scratchDir } from '../../test/models'
import { SqliteTrackerStore } from '../db/store'
import { Accounts } from './accounts'

let cleanup: () => Promise<void> = async () => {}
afterEach(() => cleanup())

describe('the ledger on disk', () => {
  it('fsyncs every commit in WAL mode, and a reopened file holds every balance', async () => {
    const scratch = await scratchDir()
    cleanup = scratch.cleanup
    const path = join(scratch.dir, 'tracker.sqlite')
    const store = new SqliteTrackerStore(path)
    expect(store.durability).toEqual({ journalMode: 'wal', synchronous: 2 })
    const accounts = new Accounts(store, 0)
    const { accountId } = (await accounts.create({ grantMicro: 1_234_567 })).account
    await accounts.grant(accountId, 1_000)
    await store.close()

    const reopened = new SqliteTrackerStore(path)
    try {
      expect(reopened.durability.synchronous).toBe(2)
      expect(await new Accounts(reopened, 0).balance(accountId)).toBe(1_235_567)
    } finally {
      await reopened.close()
    }
  })
})
