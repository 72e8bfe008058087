// A receipt rides as the trailer of a host's answer frame and survives the trip byte for byte.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { NodeIdentity, verifySignature } from '../../identity/keys'
import {
  decodeFrame,
  encodeFrame,
  type Frame,
  Receipt,
  type ReceiptBody,
  readTrailer,
  receiptMessage,
  withTrailer,
} from '../../protocol'

const host = NodeIdentity.generate()
const body: ReceiptBody = {
  session: 'ab'.repeat(16),
  step: 3,
  hostId: host.id,
  blocks: [2, 4],
  tokens: 1,
  position: 7,
  modelId: 'toy',
  price: { promptMicroPerToken: 40, completionMicroPerToken: 160 },
  tracker: NodeIdentity.generate().publicKey,
  input: createHash('sha256').update('in').digest('hex'),
  output: createHash('sha256').update('out').digest('hex'),
}
const receipt: Receipt = { ...body, signature: host.sign(receiptMessage(body)) }
const hidden: Frame = {
  kind: 'hidden',
  dtype: 'f32',
  flags: 0,
  session: body.session,
  step: 3,
  position: 7,
  tokens: 1,
  width: 2,
  payload: new Uint8Array(8).fill(1),
}

describe('receipts on the data plane', () => {
  it('travel as a hidden frame’s trailer without touching its payload, and verify against the host’s key', () => {
    const bytes = encodeFrame({ ...hidden, trailer: new TextEncoder().encode(JSON.stringify(receipt)) })
    const frame = decodeFrame(bytes)
    expect([...frame.payload]).toEqual([...hidden.payload])
    const back = readTrailer(frame, Receipt)
    expect(back).toEqual(receipt)
    const { signature, ...signed } = back as Receipt
    expect(verifySignature(host.publicKey, receiptMessage(signed), signature)).toBe(true)
    expect(verifySignature(host.publicKey, receiptMessage({ ...signed, tokens: 2 }), signature)).toBe(false)
    expect(decodeFrame(withTrailer(encodeFrame(hidden), receipt)).trailer).toEqual(frame.trailer)
  })

  it('leaves frames without one as they were, and a trailer that lies about its length is a bad frame', () => {
    const plain = decodeFrame(encodeFrame(hidden))
    expect(plain.trailer).toBeUndefined()
    expect(readTrailer(plain, Receipt)).toBeUndefined()
    const bytes = encodeFrame({ ...hidden, trailer: new TextEncoder().encode('{"not":"a receipt"}') })
    expect(readTrailer(decodeFrame(bytes), Receipt)).toBeUndefined()
    const view = new DataView(bytes.buffer, bytes.byteOffset)
    view.setUint32(44, 3, true)
    expect(() => decodeFrame(bytes)).toThrow(/trailer bytes/)
  })
})
