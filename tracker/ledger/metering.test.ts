import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { storeEngines } from '../../test/store-engines'
import { PRICE, sign, toyMetering, toySession } from '../../test/toy-ledger'
import type { TrackerStore } from '../db/store'
import { Accounts } from './accounts'
import type { Metering } from './metering'
import { hopCharge } from './pricing'

let store: TrackerStore
let metering: Metering
let accounts: Accounts
const hostA = NodeIdentity.generate()
const hostB = NodeIdentity.generate()
const keys = new Map([
  [hostA.id, hostA.publicKey],
  [hostB.id, hostB.publicKey],
])

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`metering's issued routes on ${engine.name}`, () => {
    engine.setUp()
    beforeEach(async () => {
      store = await (await engine.fresh()).open()
      accounts = new Accounts(store, 1_000_000)
      metering = toyMetering(store, keys, 3_600_000)
    })
    afterEach(async () => {
      metering.close()
      await store.close()
    })

    const session = (accountId: string | null) => toySession(metering, [hostA, hostB], accountId)

    it(
      'believes a reported failure only of a hop the tracker ' + 'issued for that span, and not on the new route',
      async () => {
        const s = await session(null)
        const replace = async (failedHost: string, span: [number, number], hostId: string) =>
          await metering.issue(s, 'toy', [{ hostId, blocks: span }], null, Date.now(), {
            maxTokens: 20,
            promptTokens: 10,
            failedHost,
            span,
          })
        const stranger = NodeIdentity.generate().id
        expect(await replace(stranger, [0, 3], hostB.id)).toBe(false)
        expect(await replace(hostA.id, [0, 4], hostB.id)).toBe(false)
        expect(await replace(hostA.id, [0, 3], hostA.id)).toBe(false)
        expect(await replace(hostA.id, [0, 3], hostB.id)).toBe(true)
      },
    )

    it(
      'keeps a failover’s new hop when, with other instances on the store, a settle reads the session between ' +
        'issue()’s read and its write (the test holds the store’s reads back to force that order)',
      async () => {
        metering.shared = true
        const hostC = NodeIdentity.generate()
        keys.set(hostC.id, hostC.publicKey)
        const { account } = await accounts.create()
        const s = await session(account.accountId)
        // issue()'s read of the route waits until settle()'s has been made too; then both resume, issue()'s first.
        const routes = store.ledger.routes
        const read = routes.route.bind(routes)
        let resume!: () => void
        const both = new Promise<void>((r) => (resume = r))
        let issueWaits!: () => void
        const issueRead = new Promise<void>((r) => (issueWaits = r))
        let reads = 0
        routes.route = async (id) => {
          const route = await read(id)
          if (++reads === 1) issueWaits()
          else resume()
          await both
          return route
        }
        const failover = metering.issue(s, 'toy', [{ hostId: hostC.id, blocks: [0, 3] }])
        await issueRead
        const settled = metering.settle(s, [sign(hostA, { session: s, step: 1, blocks: [0, 3], tokens: 2 })])
        await failover
        expect((await settled).map((v) => v.code ?? 'ok')).toEqual(['ok'])
        routes.route = read
        // The replacement host's receipt is paid: its hop was saved, not dropped by the settle's copy of the session.
        const [replaced] = await metering.settle(s, [sign(hostC, { session: s, step: 2, blocks: [0, 3], tokens: 1 })])
        expect(replaced).toMatchObject({
          ok: true,
          charged: hopCharge(PRICE, 4, { step: 2, blocks: [0, 3], tokens: 1 }),
        })
      },
    )
  })
