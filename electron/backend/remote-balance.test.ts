// The chat-account card's balance on a remote tracker: a real tracker on loopback (SQLite), a real AppBackend joined
// to it, the balance asked with the app's own key pair (account.balance) before any paid answer.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readAppReply } from '../../protocol'
import { scratchDir } from '../../test/models'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'

let cleanup: () => Promise<void> = async () => {}
let remote: Tracker
let backend: AppBackend

describe('the chat account on a remote tracker', () => {
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-remote-balance-')
    cleanup = scratch.cleanup
    remote = await Tracker.start({ dbPath: join(scratch.dir, 'remote.sqlite'), host: '127.0.0.1', port: 0 })
    backend = await AppBackend.start({
      dataDir: join(scratch.dir, 'app'),
      trackerUrl: remote.url,
      defaultModels: [],
      threads: 1,
      mdns: false,
    })
  })
  afterAll(async () => {
    await backend?.close()
    await remote?.close()
    await cleanup()
  })

  it(
    'shows the balance of the app’s key pair’s account ' + 'before any paid answer, and nothing while it has none',
    async () => {
      expect(readAppReply('earnings.get', await backend.call('earnings.get', {})).account).toBeNull()
      const { publicKey } = readAppReply('settings.get', await backend.call('settings.get', {}))
      const { account } = await remote.accounts.create({ publicKey, grantMicro: 12_345_678 })
      expect(readAppReply('earnings.get', await backend.call('earnings.get', {})).account).toEqual({
        accountId: account.accountId,
        balanceMicro: 12_345_678,
      })
    },
  )
})
