import { type Dtype, encodeFrame, type Frame, NeuronError } from '../protocol'

/** What one hop is sent for one step: token ids at the first hop, else hidden states. */
export interface HopInput {
  dtype: Dtype
  tokens: number
  width: number
  payload: Uint8Array
}

/** A forward frame carrying `input` (hidden states or token ids). */
export function forwardFrame(input: HopInput, flags: number, session: string, step: number, position: number): Uint8Array {
  return encodeFrame({ kind: 'forward', dtype: input.dtype, flags, session, step, position, tokens: input.tokens, width: input.width, payload: input.payload })
}

/** A hop's hidden-state answer as the next hop's input (copied out of the received frame). */
export function hiddenInput(answer: Frame): HopInput {
  return { dtype: answer.dtype, tokens: answer.tokens, width: answer.width, payload: new Uint8Array(answer.payload) }
}

export async function expectOk(frame: Frame): Promise<void> {
  if (frame.kind !== 'ok') throw new NeuronError('bad_frame', `expected ok, got ${frame.kind}`)
}

/** Inputs of consecutive steps as one prefill: same dtype and width, rows one after another. */
export function concatInputs(inputs: readonly HopInput[]): HopInput {
  const first = inputs[0]
  if (first === undefined) throw new NeuronError('internal', 'nothing to concatenate')
  const payload = new Uint8Array(inputs.reduce((s, i) => s + i.payload.byteLength, 0))
  let at = 0
  for (const i of inputs) {
    if (i.dtype !== first.dtype || i.width !== first.width) throw new NeuronError('bad_request', 'steps of one hop carry one dtype and width')
    payload.set(i.payload, at)
    at += i.payload.byteLength
  }
  return { dtype: first.dtype, tokens: inputs.reduce((s, i) => s + i.tokens, 0), width: first.width, payload }
}
