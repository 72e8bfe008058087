// What crosses a seam besides the hidden state, on the wire: side values in frames (token ids for DeepSeek-V4's
// hash-routed blocks, top-k indices for GLM-DSA's shared-indexer blocks), checked against the manifest's seams.
import { describe, expect, it } from 'vitest'
import { checkedAnswer } from '../../client/step-audits'
import { concatInputs, forwardFrame, hiddenInput } from '../../dataplane/hop-frames'
import { HopFailure } from '../../dataplane/hop-link'
import { NodeIdentity } from '../../identity/keys'
import {
  decodeFrame,
  encodeFrame,
  FLAG_SIDE,
  type Frame,
  NeuronError,
  type RouteHop,
  type SeamFacts,
  sideError,
  sideOf,
  sidePerToken,
} from '../../protocol'
import { seamInput, seamSide } from './seam-io'

const S = 'ab'.repeat(16)
/** Steps signed by a client key, as every forward frame is (what they carry is what this test reads). */
const SIGNING = { identity: NodeIdentity.generate(), hostId: 'cd'.repeat(10), blocks: [0, 2] as const }
// 4 blocks of width 8; boundary 1 carries 2 streams (16 values) and the token ids, boundary 2 the same plus 3 indices
const MODEL: SeamFacts = {
  nLayer: 4,
  nEmbd: 8,
  seams: [
    { cut: true, values: 16, tokenIds: true, int32PerToken: 0 },
    { cut: true, values: 16, tokenIds: true, int32PerToken: 3 },
    { cut: true, values: 16, tokenIds: false, int32PerToken: 0 },
  ],
}

function hidden(tokens: number, width: number, side: number[] | undefined): Frame {
  const values = new Float32Array(tokens * width).map((_, i) => i / 10)
  const bytes = new Uint8Array(values.buffer)
  const payload =
    side === undefined ? bytes : new Uint8Array(Buffer.concat([bytes, new Uint8Array(Int32Array.from(side).buffer)]))
  return decodeFrame(
    encodeFrame({
      kind: 'forward',
      dtype: 'f32',
      flags: side === undefined ? 0 : FLAG_SIDE,
      session: S,
      step: 1,
      position: 0,
      tokens,
      width,
      payload,
    }),
  )
}

const code = (f: () => unknown) => {
  try {
    f()
  } catch (error) {
    return error instanceof NeuronError ? error.code : String(error)
  }
  return 'none'
}

describe('side values in frames', () => {
  it('a frame carries int32 side values after its values; their count per token is read back and checked', () => {
    const f = hidden(2, 16, [7, 1, 2, 3, 9, 4, 5, 6])
    expect(sidePerToken(f)).toBe(4)
    expect([...sideOf(f)]).toEqual([7, 1, 2, 3, 9, 4, 5, 6])
    // a side that is not a whole number of int32 per token, or missing while flagged, is a bad frame
    const bytes = encodeFrame({ ...f, payload: f.payload.subarray(0, f.payload.byteLength - 4) })
    expect(code(() => decodeFrame(bytes))).toBe('bad_frame')
    expect(code(() => decodeFrame(encodeFrame({ ...f, payload: f.payload.subarray(0, 2 * 16 * 4) })))).toBe('bad_frame')
    // and values that do not fill the shape without the flag still are
    expect(code(() => decodeFrame(encodeFrame({ ...f, flags: 0 })))).toBe('bad_frame')
  })

  it(
    'a hop input keeps its side values through an answer, and a prefill of several steps puts values first, then ' +
      'side values',
    () => {
      const a = hiddenInput(hidden(2, 16, [7, 1, 2, 3, 9, 4, 5, 6]))
      const b = hiddenInput(hidden(1, 16, [11, 8, 8, 8]))
      expect(a.side).toBe(4)
      const both = concatInputs([a, b])
      const frame = decodeFrame(forwardFrame(both, 0, S, 1, 0, SIGNING))
      expect(frame.tokens).toBe(3)
      expect([...sideOf(frame)]).toEqual([7, 1, 2, 3, 9, 4, 5, 6, 11, 8, 8, 8])
      expect(frame.payload.subarray(0, 2 * 16 * 4)).toEqual(a.payload.subarray(0, 2 * 16 * 4))
    },
  )
})

describe('a session’s seams on the wire', () => {
  it('splits the token ids and indices a seam carries, and passes the token ids on to the next seam', () => {
    const input = seamInput(hidden(2, 16, [7, 1, 2, 3, 9, 4, 5, 6]), MODEL, 2, false)
    expect([...(input.tokenIds ?? [])]).toEqual([7, 9])
    expect([...(input.indices ?? [])]).toEqual([1, 2, 3, 4, 5, 6])
    // a session [1, 2) answers for boundary 2: the token ids it was given, then the runtime's indices
    const from1 = seamInput(hidden(2, 16, [7, 9]), MODEL, 1, false)
    const side = seamSide(MODEL, 2, 2, from1, Int32Array.of(1, 2, 3, 4, 5, 6))
    expect([...new Int32Array((side as Uint8Array).buffer)]).toEqual([7, 1, 2, 3, 9, 4, 5, 6])
    // the first hop passes on the token ids it embedded
    const first = seamInput(
      decodeFrame(
        forwardFrame(
          { dtype: 'i32', tokens: 2, width: 1, payload: new Uint8Array(Int32Array.of(5, 6).buffer) },
          0,
          S,
          1,
          0,
          SIGNING,
        ),
      ),
      MODEL,
      0,
      true,
    )
    expect([...new Int32Array((seamSide(MODEL, 1, 2, first, undefined) as Uint8Array).buffer)]).toEqual([5, 6])
    // nothing crosses the last seam besides values, and nothing after the last block
    expect(seamSide(MODEL, 3, 2, input, undefined)).toBeUndefined()
    expect(seamSide(MODEL, 4, 2, input, undefined)).toBeUndefined()
  })

  it('refuses a frame whose width or side values are not what the seam carries, saying what it carries', () => {
    // the hidden state alone where token ids must cross
    const noIds = hidden(2, 16, undefined)
    expect(code(() => seamInput(noIds, MODEL, 1, false))).toBe('bad_frame')
    expect(() => seamInput(noIds, MODEL, 1, false)).toThrow(
      /width 16\) and 1 int32 per token after them \(the token id\)/,
    )
    // one stream where two cross
    expect(code(() => seamInput(hidden(2, 8, [7, 9]), MODEL, 1, false))).toBe('bad_frame')
    // side values where none cross
    expect(code(() => seamInput(hidden(2, 16, [7, 9]), MODEL, 3, false))).toBe('bad_frame')
    // token ids at the first hop carry nothing else
    expect(code(() => seamInput(hidden(2, 1, [7, 9]), MODEL, 0, true))).toBe('bad_frame')
  })
})

describe('what a hop passes on is checked', () => {
  const seam = MODEL.seams?.[1] as NonNullable<SeamFacts['seams']>[number]
  const hop: RouteHop = { hostId: 'ab'.repeat(10), blocks: [1, 2], endpoint: null, seamOut: seam }
  const failure = (f: () => void) => {
    try {
      f()
    } catch (error) {
      return error instanceof HopFailure ? `${error.hostId}:${error.code}` : String(error)
    }
    return 'none'
  }

  it('by the client on every step: the seam’s width and side values, and the step’s own token ids', () => {
    const ids = Int32Array.of(7, 9)
    expect(failure(() => checkedAnswer(hop, hidden(2, 16, [7, 1, 2, 3, 9, 4, 5, 6]), ids))).toBe('none')
    // another token id passed on (it would pick other hash-routed experts at the next hop)
    expect(failure(() => checkedAnswer(hop, hidden(2, 16, [7, 1, 2, 3, 8, 4, 5, 6]), ids))).toBe(`${hop.hostId}:lied`)
    // one stream short, or the indices left out
    expect(failure(() => checkedAnswer(hop, hidden(2, 8, [7, 1, 2, 3, 9, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0]), ids))).toBe(
      `${hop.hostId}:lied`,
    )
    expect(failure(() => checkedAnswer(hop, hidden(2, 16, [7, 9]), ids))).toBe(`${hop.hostId}:lied`)
    // a replay, where the client has no step ids at hand, still checks the shape
    expect(failure(() => checkedAnswer(hop, hidden(2, 16, [7, 1, 2, 3, 8, 4, 5, 6]), undefined))).toBe('none')
  })

  it('by probes and audits: token ids equal, each token’s indices the same set', () => {
    const reference = Int32Array.of(7, 1, 2, 3, 9, 4, 5, 6)
    expect(sideError(Int32Array.of(7, 3, 2, 1, 9, 6, 5, 4), reference, seam)).toBe(0)
    expect(sideError(Int32Array.of(7, 1, 2, 3, 9, 4, 5, -1), reference, seam)).toBeCloseTo(1 / 3)
    expect(sideError(Int32Array.of(8, 1, 2, 3, 9, 4, 5, 6), reference, seam)).toBe(1)
    expect(sideError(Int32Array.of(7, 1, 2, 3), reference, seam)).toBe(1)
  })
})
