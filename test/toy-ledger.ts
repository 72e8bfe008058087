// The toy model the ledger's tests pay for (4 blocks of 1 GB), its price, the tracker key its tickets name, hosts'
// signed receipts for its steps, and Metering over a store on those terms.
import { createHash, randomBytes } from 'node:crypto'
import { NodeIdentity } from '../identity/keys'
import { type Receipt, type ReceiptBody, receiptMessage } from '../protocol'
import type { TrackerStore } from '../tracker/db/store'
import { Metering } from '../tracker/ledger/metering'

export const MODEL = { modelId: 'toy', nLayer: 4, bytesPerBlock: [1e9, 1e9, 1e9, 1e9] }
export const PRICE = { promptMicroPerToken: 40, completionMicroPerToken: 160 }
export const sha = (s: string) => createHash('sha256').update(s).digest('hex')

/** The tracker whose tickets the receipts name. */
export const TRACKER = NodeIdentity.generate()

/** A host's receipt for a step of the toy model, at its price, on TRACKER's ticket (position 0 unless given). */
export function sign(
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

/** Metering of the toy model on `store`, at PRICE with a 10 % fee, the hosts' keys from `keys`. */
export function toyMetering(store: TrackerStore, keys: ReadonlyMap<string, string>, settlementWindowMs: number) {
  return new Metering(
    store.ledger,
    () => MODEL,
    (id) => keys.get(id),
    { prices: { toy: PRICE }, feeBps: 1000 },
    TRACKER.publicKey,
    { settlementWindowMs },
  )
}

/** A session issued to route [0, 3) on `first` and [3, 4) on `second`, paid by `accountId` (null: nobody). */
export async function toySession(
  metering: Metering,
  [first, second]: readonly [NodeIdentity, NodeIdentity],
  accountId: string | null,
): Promise<string> {
  const id = randomBytes(16).toString('hex')
  await metering.issue(id, 'toy', [
    { hostId: first.id, blocks: [0, 3] },
    { hostId: second.id, blocks: [3, 4] },
  ])
  if (accountId !== null) await metering.bind(id, accountId)
  return id
}
