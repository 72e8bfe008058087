// The seam check between hops: the tracker holds each step's receipts against each other, so a hop that
// took other bytes than the hop before it answered is noticed, whichever receipt comes in first.
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import { type Receipt, type ReceiptBody, receiptMessage } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { Metering } from './metering'

const PRICE = { promptMicroPerToken: 40, completionMicroPerToken: 160 }
const TRACKER = NodeIdentity.generate()
const hostA = NodeIdentity.generate()
const hostB = NodeIdentity.generate()
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

function sign(host: NodeIdentity, session: string, blocks: [number, number], input: string, output: string): Receipt {
  const body: ReceiptBody = {
    session,
    step: 2,
    hostId: host.id,
    blocks,
    tokens: 1,
    position: 4,
    modelId: 'toy',
    price: PRICE,
    tracker: TRACKER.publicKey,
    input,
    output,
  }
  return { ...body, signature: host.sign(receiptMessage(body)) }
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`the seam between two hops of a step on ${engine.name}`, () => {
    engine.setUp()
    let store: TrackerStore
    let metering: Metering
    const keys = new Map([
      [hostA.id, hostA.publicKey],
      [hostB.id, hostB.publicKey],
    ])
    const model = { modelId: 'toy', nLayer: 4, bytesPerBlock: [1e9, 1e9, 1e9, 1e9] }
    const seams: string[] = []
    beforeAll(async () => {
      store = await (await engine.fresh()).open()
      metering = new Metering(
        store.ledger,
        () => model,
        (id) => keys.get(id),
        { prices: { toy: PRICE } },
        TRACKER.publicKey,
        { settlementWindowMs: 0 },
      )
      metering.on('seam', (_session, _step, message) => seams.push(message))
    })
    afterEach(() => {
      seams.length = 0
    })
    afterAll(async () => {
      metering.close()
      await store.close()
    })

    async function session(): Promise<string> {
      const id = randomBytes(16).toString('hex')
      await metering.issue(id, 'toy', [
        { hostId: hostA.id, blocks: [0, 3] },
        { hostId: hostB.id, blocks: [3, 4] },
      ])
      return id
    }

    it('is quiet when each hop took what the one before it answered, in either order of hand-in', async () => {
      const s1 = await session()
      await metering.settle(s1, [
        sign(hostA, s1, [0, 3], sha('x'), sha('h')),
        sign(hostB, s1, [3, 4], sha('h'), sha('t')),
      ])
      const s2 = await session()
      await metering.settle(s2, [sign(hostB, s2, [3, 4], sha('h'), sha('t'))])
      await metering.settle(s2, [sign(hostA, s2, [0, 3], sha('x'), sha('h'))])
      expect(seams).toEqual([])
    })

    it(
      'names the two hops when one took other bytes than the other answered, whichever came in first; both are ' +
        'still paid',
      async () => {
        const s1 = await session()
        const verdicts = await metering.settle(s1, [
          sign(hostA, s1, [0, 3], sha('x'), sha('h')),
          sign(hostB, s1, [3, 4], sha('forged'), sha('t')),
        ])
        expect(verdicts.every((v) => v.ok)).toBe(true)
        const s2 = await session()
        await metering.settle(s2, [sign(hostB, s2, [3, 4], sha('forged'), sha('t'))])
        await metering.settle(s2, [sign(hostA, s2, [0, 3], sha('x'), sha('h'))])
        expect(seams).toEqual([
          'step 2: blocks [3, 4) took other bytes than blocks [0, 3) answered',
          'step 2: blocks [3, 4) took other bytes than blocks [0, 3) answered',
        ])
      },
    )
  })
