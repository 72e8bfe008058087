// account.balance on a real tracker (SQLite file, loopback): a key pair reads its own account's balance and held
// credits over its authenticated /clients socket, and nothing lets one key read another's.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import { ClientToTracker, callRpc } from '../../protocol'
import { scratchDir } from '../../test/models'
import { Tracker } from '../server'

let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
const alice = NodeIdentity.generate()
const mallory = NodeIdentity.generate()

async function balanceAs(who: NodeIdentity, payload: unknown = {}): Promise<unknown> {
  const socket = await connectTracker(tracker.url, '/clients', who)
  try {
    return await socket.timeout(10_000).emitWithAck('account.balance', payload)
  } finally {
    socket.close()
  }
}

describe('account.balance: a key pair’s own balance and held credits', () => {
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-key-balance-')
    cleanup = scratch.cleanup
    tracker = await Tracker.start({ dbPath: join(scratch.dir, 'tracker.sqlite'), host: '127.0.0.1', port: 0 })
  })
  afterAll(async () => {
    await tracker?.close()
    await cleanup()
  })

  it('answers the caller’s account: its balance and what a session in flight holds of it', async () => {
    const { account } = await tracker.accounts.create({ publicKey: alice.publicKey, grantMicro: 5_000 })
    await tracker.store.holds.take('a'.repeat(32), account.accountId, () => ({ heldMicro: 1_200, maxTokens: 8 }))
    const socket = await connectTracker(tracker.url, '/clients', alice)
    try {
      expect(await callRpc(socket, ClientToTracker, 'account.balance', {})).toEqual({
        accountId: account.accountId,
        balanceMicro: 5_000,
        heldMicro: 1_200,
      })
    } finally {
      socket.close()
    }
  })

  it(
    'never tells another key’s balance: a key without an account gets unknown_account, and naming a key in the ' +
      'request is refused',
    async () => {
      expect(await balanceAs(mallory)).toMatchObject({
        ok: false,
        error: { code: 'unknown_account', message: expect.stringContaining('has no account') },
      })
      // The attack: name alice's key (or account) in the request.
      // The request has no such field; it is refused, not read.
      for (const payload of [{ publicKey: alice.publicKey }, { accountId: 'acct_0000000000000000' }]) {
        const answer = await balanceAs(mallory, payload)
        expect(answer).toMatchObject({ ok: false, error: { code: 'bad_request' } })
        expect(JSON.stringify(answer)).not.toContain('5000')
      }
      // With an account of its own, mallory reads that one, never alice's.
      const { account } = await tracker.accounts.create({ publicKey: mallory.publicKey, grantMicro: 7 })
      expect(await balanceAs(mallory)).toEqual({
        ok: true,
        value: { accountId: account.accountId, balanceMicro: 7, heldMicro: 0 },
      })
      // The tracker keeps serving after the refusals.
      expect(await balanceAs(alice)).toMatchObject({ ok: true, value: { balanceMicro: 5_000 } })
    },
  )
})
