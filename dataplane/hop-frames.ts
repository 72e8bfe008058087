import { payloadSha256 } from '../identity/tickets'
import {
  type Dtype,
  encodeFrame,
  FLAG_SIDE,
  type Frame,
  NeuronError,
  type StepTrailer,
  sidePerToken,
  splitPayload,
  stepMessage,
} from '../protocol'

/** What one hop is sent for one step: token ids at the first hop, else hidden states. */
export interface HopInput {
  dtype: Dtype
  tokens: number
  width: number
  /** tokens × width values, then tokens × `side` int32 side values (token ids, indices) where the seam carries them. */
  payload: Uint8Array
  /** int32 side values per token after the values (FLAG_SIDE); 0 or absent when none. */
  side?: number
}

/** Who signs each step sent to one hop: the client's key, and the hop as its ticket names it. */
export interface StepSigning {
  readonly identity: { sign(message: string): string }
  readonly hostId: string
  readonly blocks: readonly [number, number]
}

/**
 * A forward frame carrying `input` (hidden states or token ids), signed by the client for that hop (stepMessage as its
 * trailer): the host serves only steps its session's client signed, and its receipt carries the signature.
 */
export function forwardFrame(
  input: HopInput,
  flags: number,
  session: string,
  step: number,
  position: number,
  signing: StepSigning,
): Uint8Array {
  const side = (input.side ?? 0) > 0 ? FLAG_SIDE : 0
  const terms = {
    session,
    hostId: signing.hostId,
    blocks: signing.blocks,
    step,
    position,
    tokens: input.tokens,
    input: payloadSha256(input.payload),
  }
  const trailer: StepTrailer = { client: signing.identity.sign(stepMessage(terms)) }
  return encodeFrame({
    kind: 'forward',
    dtype: input.dtype,
    flags: flags | side,
    session,
    step,
    position,
    tokens: input.tokens,
    width: input.width,
    payload: input.payload,
    trailer: new TextEncoder().encode(JSON.stringify(trailer)),
  })
}

/** `input` cut to its first `rows` rows, its side values too (a verify step's accepted positions). */
export function firstRows(input: HopInput, rows: number): HopInput {
  if (input.tokens <= rows) return input
  const side = input.side ?? 0
  const { values, side: sideValues } = splitPayload(input.payload, input.tokens, side)
  const rowBytes = values.byteLength / input.tokens
  const payload = Buffer.concat([values.subarray(0, rows * rowBytes), sideValues.subarray(0, rows * side * 4)])
  return { ...input, tokens: rows, payload: new Uint8Array(payload) }
}

/** A hop's hidden-state answer as the next hop's input (copied out of the received frame). */
export function hiddenInput(answer: Frame): HopInput {
  const side = sidePerToken(answer)
  return {
    dtype: answer.dtype,
    tokens: answer.tokens,
    width: answer.width,
    payload: new Uint8Array(answer.payload),
    ...(side > 0 ? { side } : {}),
  }
}

export async function expectOk(frame: Frame): Promise<void> {
  if (frame.kind !== 'ok') throw new NeuronError('bad_frame', `expected ok, got ${frame.kind}`)
}

/**
 * Inputs of consecutive steps as one prefill: same dtype, width and
 * side values, rows one after another (values, then side values).
 */
export function concatInputs(inputs: readonly HopInput[]): HopInput {
  const first = inputs[0]
  if (first === undefined) throw new NeuronError('internal', 'nothing to concatenate')
  const side = first.side ?? 0
  const parts = inputs.map((i) => {
    if (i.dtype !== first.dtype || i.width !== first.width || (i.side ?? 0) !== side)
      throw new NeuronError('bad_request', 'steps of one hop carry one dtype, width and side values')
    return splitPayload(i.payload, i.tokens, side)
  })
  const payload = Buffer.concat([...parts.map((p) => p.values), ...parts.map((p) => p.side)])
  const tokens = inputs.reduce((s, i) => s + i.tokens, 0)
  return {
    dtype: first.dtype,
    tokens,
    width: first.width,
    payload: new Uint8Array(payload),
    ...(side > 0 ? { side } : {}),
  }
}
