// A client's receipts.submit: whatever it hands in, each receipt gets a typed verdict and the tracker keeps serving.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import { ClientToTracker, callRpc } from '../../protocol'
import { scratchDir } from '../../test/models'
import { storeEngines } from '../../test/store-engines'
import { Tracker } from '../server'

let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`a client's receipts on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      let dir = ''
      ;({ dir, cleanup } = await scratchDir())
      const dbPath = (await engine.fresh()).location
      tracker = await Tracker.start({ dbPath, keyPath: join(dir, 'tracker-key.pem'), heartbeatMs: 200 })
    })
    afterAll(async () => {
      await tracker?.close()
      await cleanup()
    })

    it('refuses a receipt claiming a host id of any length with a typed verdict naming no such host', async () => {
      const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        const receipts = [{ hostId: 'h'.repeat(100_000), step: 1 }, { hostId: Buffer.from('xx') }, 'not a receipt']
        const { verdicts } = await callRpc(client, ClientToTracker, 'receipts.submit', {
          session: 'cd'.repeat(16),
          receipts,
        })
        expect(verdicts.map((v) => [v.hostId, v.ok, v.code])).toEqual(
          receipts.map(() => ['unknown', false, 'bad_receipt']),
        )
      } finally {
        client.close()
      }
    })
  })
