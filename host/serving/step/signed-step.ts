// Who vouches for a step: its client's signature when the client sent it, or, for a step forwarded hop to hop, the
// chain of receipts back to the route's first hop, where the client signed it (forwarding.ts sends that chain on).
import { timingSafeEqual } from 'node:crypto'
import { verifySignature } from '../../../identity/keys'
import { payloadSha256 } from '../../../identity/tickets'
import {
  type ChainTrailer,
  type Frame,
  NeuronError,
  type Receipt,
  readTrailer,
  receiptMessage,
  StepTrailer,
  stepMessage,
} from '../../../protocol'
import type { ServedSession } from '../served-session'

/** A step as its client signed it: the sha256 of what it sent, and the signature the receipt carries. */
export interface SignedStep {
  readonly input: string
  /**
   * Absent on a step forwarded from the predecessor hop: the client signed it at the route's first hop (forwarding.ts).
   */
  readonly client?: string
}

/**
 * The step's client signature, checked against the session's client
 * key; a step without a valid one is refused (the client's doing).
 */
export function clientSigned(served: ServedSession, frame: Frame): SignedStep {
  const trailer = readTrailer(frame, StepTrailer)
  if (trailer === undefined)
    throw new NeuronError(
      'unsigned_step',
      `step ${frame.step} carries no client signature; a host serves only steps its session's client signed.`,
    )
  const input = payloadSha256(frame.payload)
  const terms = {
    session: frame.session,
    hostId: served.ticket.hostId,
    blocks: served.open.blocks,
    step: frame.step,
    position: frame.position,
    tokens: frame.tokens,
    input,
  }
  if (!verifySignature(served.clientKeyObject, stepMessage(terms), trailer.client))
    throw new NeuronError(
      'bad_step_signature',
      `step ${frame.step} is not signed by the session's client key; sign each step with the key its ticket names.`,
    )
  return { input, client: trailer.client }
}

function sameCapability(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))
}

const badChain = (frame: Frame, why: string) =>
  new NeuronError(
    'bad_chain',
    `forwarded step ${frame.step} of session ${frame.session} refused: ${why}; the client falls back to carrying ` +
      `this leg itself.`,
  )

/**
 * A forwarded step's proof: the seam's capability (the client gave it to this hop's predecessor alone), the
 * predecessor's receipt naming exactly these bytes as its output, and the first hop's receipt carrying the client's
 * signature of this step (so only steps the client sent run). Both receipts must be signed by the hosts this hop's
 * ticket names upstream (the tracker's word for whose they are): the client holds the capability, so without them it
 * could make up a step no hop before this one ran. The receipt this hop signs names the input it took.
 */
export function chainSigned(served: ServedSession, frame: Frame, chain: ChainTrailer): SignedStep {
  const accept = served.open.forwarding?.accept
  if (accept === undefined || !sameCapability(accept, chain.capability))
    throw new NeuronError(
      'bad_capability',
      `session ${frame.session} takes no forwarded frame with this capability; only the hop its client named may ` +
        `forward into it.`,
    )
  const input = payloadSha256(frame.payload)
  const { prev, origin } = chain
  const sameStep = (r: Receipt) =>
    r.session === frame.session && r.step === frame.step && r.position === frame.position && r.tokens === frame.tokens
  if (!sameStep(prev) || !sameStep(origin)) throw badChain(frame, 'the receipts it carries are for another step')
  if (prev.output !== input) throw badChain(frame, 'its payload is not the output its predecessor signed')
  if (prev.blocks[1] !== served.open.blocks[0])
    throw badChain(frame, `its predecessor ran blocks up to ${prev.blocks[1]}, not ${served.open.blocks[0]}`)
  const upstream = served.ticket.upstream ?? []
  const signedBy = (r: Receipt, host: { hostId: string; publicKey: string } | undefined) => {
    const { signature, ...body } = r
    return host?.hostId === r.hostId && verifySignature(host.publicKey, receiptMessage(body), signature)
  }
  if (!signedBy(prev, upstream.at(-1)))
    throw badChain(frame, "its predecessor's receipt is not signed by the hop its ticket names before this one")
  if (
    !signedBy(
      origin,
      upstream.find((h) => h.hostId === origin.hostId),
    )
  )
    throw badChain(frame, "the first hop's receipt is not signed by a hop its ticket names upstream")
  const terms = {
    session: frame.session,
    hostId: origin.hostId,
    blocks: origin.blocks,
    step: frame.step,
    position: frame.position,
    tokens: frame.tokens,
  }
  if (
    origin.client === undefined ||
    !verifySignature(served.clientKeyObject, stepMessage({ ...terms, input: origin.input }), origin.client)
  )
    throw new NeuronError(
      'bad_step_signature',
      `forwarded step ${frame.step} does not carry its client's signature of the step at the route's first hop.`,
    )
  return { input }
}
