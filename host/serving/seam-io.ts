// What crosses a session's seams on the wire (protocol/seams.ts): a forward frame is checked against the
// manifest's seam at the session's first block and split into the runtime's inputs (values, token ids,
// indices); a hidden answer carries what the seam at the session's last block needs besides the values.

import {
  type Frame,
  joinSide,
  NeuronError,
  payloadAs,
  type SeamFacts,
  seamAt,
  seamSideValues,
  sideOf,
  sidePerToken,
  splitSide,
} from '../../protocol'
import type { ServingSession } from './serving-runtime'

/** A forward frame's contents as the runtime takes them. */
export interface SeamInput {
  readonly values: Int32Array | Float32Array | Uint16Array
  /** The rows' token ids: the input itself at the first hop, else from the side values where the seam carries them. */
  readonly tokenIds?: Int32Array
  /** The seam's indices, int32PerToken per row, token-major. */
  readonly indices?: Int32Array
}

/**
 * Checks a forward frame against what a session starting at block `from` takes (token ids at block 0; else the
 * seam's values and side values) and splits it. A frame that does not match is a `bad_frame` error saying what
 * the seam carries.
 */
export function seamInput(frame: Frame, model: SeamFacts, from: number, takesTokens: boolean): SeamInput {
  if (takesTokens) {
    if (frame.dtype !== 'i32' || frame.width !== 1 || sidePerToken(frame) !== 0)
      throw new NeuronError(
        'bad_frame',
        `the first hop takes token ids (i32, width 1), not ${frame.dtype} × ${frame.width}.`,
      )
    const ids = payloadAs(frame) as Int32Array
    return { values: ids, tokenIds: ids }
  }
  const seam = seamAt(model, from)
  const side = seamSideValues(seam)
  if (frame.dtype === 'i32' || frame.dtype === 'json' || frame.width !== seam.values || sidePerToken(frame) !== side) {
    const parts = [
      ...(seam.tokenIds ? ['the token id'] : []),
      ...(seam.int32PerToken > 0 ? [`${seam.int32PerToken} indices`] : []),
    ]
    const carries = side === 0 ? '' : ` and ${side} int32 per token after them (${parts.join(', then ')})`
    throw new NeuronError(
      'bad_frame',
      `this hop takes hidden states (f32 or f16, width ${seam.values})${carries} at block ${from}, not ` +
        `${frame.dtype} × ${frame.width} with ${sidePerToken(frame)} side values per token.`,
      { expectedWidth: seam.values, width: frame.width, expectedSide: side, side: sidePerToken(frame) },
    )
  }
  const values = payloadAs(frame)
  return { values, ...splitSide(seam, sideOf(frame)) }
}

/**
 * The side values a hidden answer of `rows` rows carries for the seam at block `to`: the rows' token ids (passed
 * on from the input) where the seam needs them, then the runtime's indices. Undefined when the seam carries none.
 */
export function seamSide(
  model: SeamFacts,
  to: number,
  rows: number,
  input: SeamInput,
  indices: Int32Array | undefined,
): Uint8Array | undefined {
  if (to <= 0 || to >= model.nLayer) return undefined
  const seam = seamAt(model, to)
  const side = seamSideValues(seam)
  if (side === 0) return undefined
  const k = seam.int32PerToken
  if (seam.tokenIds && input.tokenIds?.length !== rows)
    throw new NeuronError(
      'internal',
      `the seam after block ${to - 1} carries token ids, and this session's input had none to pass on.`,
    )
  if (k > 0 && indices?.length !== rows * k)
    throw new NeuronError(
      'internal',
      `the seam after block ${to - 1} carries ${k} indices per token; the runtime returned ${indices?.length ?? 0} ` +
        `for ${rows} rows.`,
    )
  const out = joinSide(seam, rows, input.tokenIds, indices)
  return new Uint8Array(out.buffer)
}

/** What a loaded session says crosses its seams (the native ShardSession; a test's wrapper may not say). */
interface SessionSeams {
  readonly inputWidth?: number
  readonly outputWidth?: number
  readonly needsTokenIds?: boolean
  readonly indicesIn?: number
  readonly indicesOut?: number
}

/**
 * Refuses to serve blocks [from, to) when the runtime's seams are not the manifest's (a manifest packed by another
 * version, or metadata read two ways): hops would refuse each other's frames, or drop what the next one needs.
 */
export function checkSeamsAgree(
  serving: ServingSession,
  model: SeamFacts,
  [from, to]: readonly [number, number],
): void {
  const session = serving as SessionSeams
  const wrong: string[] = []
  const inSeam = seamAt(model, from)
  const outSeam = seamAt(model, to)
  const differs = (what: string, runtime: number | boolean | undefined, manifest: number | boolean) => {
    if (runtime !== undefined && runtime !== manifest)
      wrong.push(`${what}: the runtime ${runtime}, the manifest ${manifest}`)
  }
  if (from > 0) {
    differs(`values per token into block ${from}`, session.inputWidth, inSeam.values)
    differs(`token ids into block ${from}`, session.needsTokenIds, inSeam.tokenIds)
    differs(`indices into block ${from}`, session.indicesIn, inSeam.int32PerToken)
  }
  if (to < model.nLayer) {
    differs(`values per token after block ${to - 1}`, session.outputWidth, outSeam.values)
    differs(`indices after block ${to - 1}`, session.indicesOut, outSeam.int32PerToken)
  }
  if (wrong.length > 0)
    throw new NeuronError(
      'seams_differ',
      `the model's manifest and this host's runtime disagree on what crosses its seams (${wrong.join('; ')}); the ` +
        `manifest was packed by another version: pack and publish it again.`,
    )
}
