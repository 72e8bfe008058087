// The routes metering keeps for a session on a real SQLite file and a real PostgreSQL database: failovers add up,
// a reported failure is believed only of a hop the tracker issued, and a failover's hop survives a concurrent settle.
import { createHash, randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { type Receipt, type ReceiptBody, receiptMessage } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { Accounts } from './accounts'
import { Metering } from './metering'
import { hopCharge } from './pricing'

const MODEL = { modelId: 'toy', nLayer: 4, bytesPerBlock: [1e9, 1e9, 1e9, 1e9] }
const PRICE = { promptMicroPerToken: 40, completionMicroPerToken: 160 }
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

const TRACKER = NodeIdentity.generate()

/** A host's receipt for a step of the toy model, at its price, on TRACKER's ticket (position 0 unless given). */
function sign(
  host: NodeIdentity,
  body: Omit<ReceiptBody, 'hostId' | 'input' | 'output' | 'position' | 'modelId' | 'price' | 'tracker'> &
    Partial<ReceiptBody>,
): Receipt {
  const full: ReceiptBody = {
    position: 0,
    modelId: 'toy',
    price: PRICE,
    tracker: TRACKER.publicKey,
    ...body,
    hostId: host.id,
    input: sha(`in ${body.step}`),
    output: sha(`out ${body.step}`),
  }
  return { ...full, signature: host.sign(receiptMessage(full)) }
}

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
      metering = new Metering(
        store.ledger,
        () => MODEL,
        (id) => keys.get(id),
        { prices: { toy: PRICE }, feeBps: 1000 },
        TRACKER.publicKey,
        { settlementWindowMs: 3_600_000 },
      )
    })
    afterEach(async () => {
      metering.close()
      await store.close()
    })

    async function session(accountId: string | null): Promise<string> {
      const id = randomBytes(16).toString('hex')
      await metering.issue(id, 'toy', [
        { hostId: hostA.id, blocks: [0, 3] },
        { hostId: hostB.id, blocks: [3, 4] },
      ])
      if (accountId !== null) await metering.bind(id, accountId)
      return id
    }

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
