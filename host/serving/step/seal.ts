import { payloadSha256 } from '../../../identity/tickets'
import {
  encodeFrame,
  type Frame,
  frameSketch,
  type Receipt,
  type ReceiptBody,
  receiptMessage,
  samplingCommitment,
} from '../../../protocol'
import type { AcceptedStep } from './accept'

/** The part of a NodeIdentity that signs receipts. */
export interface ReceiptSigner {
  readonly id: string
  sign(message: string): string
}

/**
 * Encodes an answer with this host's signed receipt for the step, the client's signature and the commitment to its
 * rows in it, as its trailer, and hands the receipt in (`onReceipt`); without a signer the answer carries none.
 */
export function seal(
  { served, frame: request, signed }: AcceptedStep,
  answer: Frame,
  signer: ReceiptSigner | undefined,
  onReceipt: ((receipt: Receipt) => void) | undefined,
): Uint8Array {
  if (signer === undefined) return encodeFrame(answer)
  // the commitment an audit by prefill compares this step's rows with, or at a last hop the sampling it re-draws
  // the token with (protocol/commitment.ts)
  const sketch = answer.kind === 'token' ? samplingCommitment(served.sampling.params) : frameSketch(answer)
  const body: ReceiptBody = {
    session: request.session,
    step: request.step,
    hostId: signer.id,
    // What this step actually ran: a session may use part of the host's span.
    blocks: [served.runtime.blocks[0], served.runtime.blocks[1]],
    tokens: request.tokens,
    position: request.position,
    modelId: served.ticket.modelId,
    price: served.ticket.price,
    tracker: served.ticket.trackerKey,
    input: signed.input,
    output: payloadSha256(answer.payload),
    ...(signed.client === undefined ? {} : { client: signed.client }),
    ...(sketch === undefined ? {} : { commit: payloadSha256(sketch) }),
  }
  const receipt = { ...body, signature: signer.sign(receiptMessage(body)) }
  // a forwarded step's receipt is handed in once its client signs it (forwarding.ts's countersign)
  if (signed.client !== undefined) onReceipt?.(receipt)
  return encodeFrame({ ...answer, trailer: new TextEncoder().encode(JSON.stringify(receipt)) })
}
