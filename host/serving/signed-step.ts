import { verifySignature } from '../../identity/keys'
import { payloadSha256 } from '../../identity/tickets'
import { type Frame, NeuronError, readTrailer, StepTrailer, stepMessage } from '../../protocol'
import type { ServedSession } from './served-session'

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
