import { type Dtype, encodeFrame, FLAG_SIDE, type Frame, NeuronError, sidePerToken, splitPayload } from '../protocol'

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

/** A forward frame carrying `input` (hidden states or token ids). */
export function forwardFrame(input: HopInput, flags: number, session: string, step: number, position: number): Uint8Array {
  const side = (input.side ?? 0) > 0 ? FLAG_SIDE : 0
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
  })
}

/** A hop's hidden-state answer as the next hop's input (copied out of the received frame). */
export function hiddenInput(answer: Frame): HopInput {
  const side = sidePerToken(answer)
  return { dtype: answer.dtype, tokens: answer.tokens, width: answer.width, payload: new Uint8Array(answer.payload), ...(side > 0 ? { side } : {}) }
}

export async function expectOk(frame: Frame): Promise<void> {
  if (frame.kind !== 'ok') throw new NeuronError('bad_frame', `expected ok, got ${frame.kind}`)
}

/** Inputs of consecutive steps as one prefill: same dtype, width and side values, rows one after another (values, then side values). */
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
  return { dtype: first.dtype, tokens, width: first.width, payload: new Uint8Array(payload), ...(side > 0 ? { side } : {}) }
}
