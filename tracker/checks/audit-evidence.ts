// What an audit is handed and how it compares (auditor.ts): the hop's history, checked against the receipts it signed,
// and the multiples of the tolerance by which a re-run's rows differ from the answer and the sketches it committed to.
import { createHash } from 'node:crypto'
import { firstRows, type HopInput } from '../../dataplane/hop-frames'
import { publicKeyObject, verifySignature } from '../../identity/keys'
import { payloadSha256 } from '../../identity/tickets'
import {
  type AuditRequest,
  NeuronError,
  receiptMessage,
  SEAM_TOLERANCE,
  type Seam,
  type SeamFacts,
  SIDE_TOLERANCE,
  SKETCH_TOLERANCE,
  seamAt,
  seamError,
  seamSideValues,
  sideError,
  sketchBytes,
  sketchError,
} from '../../protocol'

/** A hop's hidden-state rows, in order: their values as f32, and the side values they pass on. */
export interface Rows {
  readonly values: Float32Array
  readonly side: Int32Array
}

/**
 * How far two hosts' rows differ, as a multiple of what honest hosts differ by (1: at the tolerance). `claimed`: the
 * audited hop's last answer whole and, when the client saw them all, every step's sketch; `rerun`: every row of a
 * re-run. Two re-runs compare whole.
 */
export interface Compare {
  claimed(answer: Rows, rerun: Rows): number
  runs(x: Rows, y: Rows): number
}

/** A multiple of the tolerance as people read it. */
export const times = (ratio: number) =>
  Number.isFinite(ratio) ? `${ratio.toPrecision(2)}× the tolerance` : 'beyond measure'

/** Checked receipt signatures remembered at once (about 150 bytes each); past it the memory starts again. */
const MAX_VERIFIED_RECEIPTS = 100_000

/** A hop's history as an audit takes it, with the receipt signatures already checked remembered. */
export class AuditEvidence {
  /**
   * Receipts whose signature this tracker has checked, by key, message and signature: a session's audits
   * each hand in the hop's whole history, and checking every receipt again made an audit's cost grow with
   * the session (ed25519 was 40 % of an app chat's CPU at 400 tokens). Only a checked triple is kept.
   */
  private readonly verifiedReceipts = new Set<string>()

  /**
   * Each step's payload must be what the host signed it took, positions one after another, and each sketch the one its
   * receipt commits to; returns them as hop inputs, with the sketches when the request carries them.
   */
  history(
    request: AuditRequest,
    model: SeamFacts,
    registered: string | undefined,
    /**
     * The session started from another's cache (route.plan's fork): its history begins with that session's steps on
     * this hop up to the fork's position (the host's own receipts for them), then its own from there.
     */
    fork?: { readonly session: string; readonly position: number },
  ): { steps: HopInput[]; sketches: Uint8Array[] | undefined } {
    const { hostId, blocks, session } = request
    // what the hop takes: token ids at block 0, else the seam's values and side values (never the client's say-so)
    const seamIn = seamAt(model, blocks[0])
    const takes = blocks[0] === 0 ? { width: 1, side: 0 } : { width: seamIn.values, side: seamSideValues(seamIn) }
    if (registered === undefined) throw new NeuronError('unknown_host', `host ${hostId} is not registered here.`)
    // Parsed once: a history may hold thousands of receipts, all checked with this key.
    const key = publicKeyObject(registered)
    let position = 0
    let at = 0
    const steps: HopInput[] = []
    for (const [i, s] of request.steps.entries()) {
      const r = s.receipt
      const payload = request.payloads.subarray(at, at + s.bytes)
      at += s.bytes
      const ours =
        r.session === session || (fork !== undefined && r.session === fork.session && position < fork.position)
      if (r.hostId !== hostId || !ours || r.blocks[0] !== blocks[0] || r.blocks[1] !== blocks[1])
        throw new NeuronError(
          'bad_request',
          `step ${i + 1}'s receipt is not host ${hostId}'s for this session and blocks` +
            `${fork === undefined ? '' : ` (or the session it started from, before position ${fork.position})`}.`,
        )
      const { signature, ...body } = r
      const message = receiptMessage(body)
      const checked = `${registered}:${signature}:${createHash('sha256').update(message).digest('base64url')}`
      if (!this.verifiedReceipts.has(checked)) {
        if (!verifySignature(key, message, signature))
          throw new NeuronError('bad_signature', `step ${i + 1}'s receipt is not signed by host ${hostId}.`)
        if (this.verifiedReceipts.size >= MAX_VERIFIED_RECEIPTS) this.verifiedReceipts.clear()
        this.verifiedReceipts.add(checked)
      }
      if (r.position !== position || r.tokens !== s.tokens)
        throw new NeuronError('bad_request', `step ${i + 1} must run from position ${position}, not ${r.position}.`)
      if (s.width !== takes.width || s.side !== takes.side || (blocks[0] === 0) !== (s.dtype === 'i32'))
        throw new NeuronError(
          'bad_request',
          `step ${i + 1} carries ${s.dtype} × ${s.width} and ${s.side} side values per token; blocks from ` +
            `${blocks[0]} take ` +
            `${blocks[0] === 0 ? 'token ids' : `${takes.width} values and ${takes.side} side values`}.`,
        )
      const valueBytes = s.dtype === 'f16' ? 2 : 4
      if (payload.byteLength !== s.tokens * (s.width * valueBytes + 4 * s.side))
        throw new NeuronError(
          'bad_request',
          `step ${i + 1}'s payload is not ${s.tokens} × ${s.width} ${s.dtype} values and ${s.side} int32 side ` +
            `values per token.`,
        )
      if (payloadSha256(payload) !== r.input)
        throw new NeuronError('bad_request', `step ${i + 1}'s payload is not what host ${hostId} signed it took.`)
      if (s.kept !== undefined && s.kept > s.tokens)
        throw new NeuronError('bad_request', `step ${i + 1} keeps ${s.kept} of its ${s.tokens} rows.`)
      // a verify step: the route kept its first rows, and the next step runs on from them
      const whole: HopInput = {
        dtype: s.dtype,
        tokens: s.tokens,
        width: s.width,
        payload,
        ...(s.side > 0 ? { side: s.side } : {}),
      }
      const kept = s.kept ?? s.tokens
      position += kept
      steps.push(kept < s.tokens ? firstRows(whole, kept) : whole)
    }
    const last = request.steps.at(-1)?.receipt
    if (last === undefined || payloadSha256(request.output) !== last.output)
      throw new NeuronError('bad_request', `the answer is not what host ${hostId} signed it answered.`)
    const width = seamAt(model, blocks[1]).values
    // each sketch cut to the rows its step kept
    const sketches = committedSketches(request, width)?.map((k, i) =>
      k.subarray(0, sketchBytes(steps[i]?.tokens ?? 0, width)),
    )
    return { steps, sketches }
  }
}

/**
 * The request's sketches, one per step, each `rows` × the answer's width long and hashing to what the step's receipt
 * commits to (so they are the host's own claims); undefined when the request carries none.
 */
function committedSketches(request: AuditRequest, width: number): Uint8Array[] | undefined {
  if (request.sketches === undefined) return undefined
  const sketches: Uint8Array[] = []
  let at = 0
  for (const [i, { receipt }] of request.steps.entries()) {
    const sketch = request.sketches.subarray(at, at + sketchBytes(receipt.tokens, width))
    at += sketch.byteLength
    if (sketch.byteLength !== sketchBytes(receipt.tokens, width) || payloadSha256(sketch) !== receipt.commit)
      throw new NeuronError(
        'bad_request',
        `step ${i + 1}'s sketch is not the one host ${request.hostId} signed; send each answer's sketch.`,
      )
    sketches.push(sketch)
  }
  if (at !== request.sketches.byteLength)
    throw new NeuronError('bad_request', `the sketches are longer than the ${request.steps.length} steps' rows.`)
  return sketches
}

/** How an audit compares rows of `width` values crossing `seam`: see Compare. */
export function comparing(
  steps: readonly HopInput[],
  sketches: readonly Uint8Array[] | undefined,
  width: number,
  seam: Seam,
): Compare {
  const lastRows = steps.at(-1)?.tokens ?? 0
  const perRow = seamSideValues(seam)
  const runs = (x: Rows, y: Rows) =>
    sideError(x.side, y.side, seam) > SIDE_TOLERANCE
      ? Number.POSITIVE_INFINITY
      : seamError(x.values, y.values, width) / SEAM_TOLERANCE
  return {
    runs,
    claimed(answer, rerun) {
      // the last answer whole, against the re-run's last rows: values within the seam tolerance, side values the same
      const tail = {
        values: rerun.values.subarray(rerun.values.length - lastRows * width),
        side: rerun.side.subarray(rerun.side.length - lastRows * perRow),
      }
      let worst = runs(answer, tail)
      // and every step's rows against its sketch
      let row = 0
      for (const [i, sketch] of (sketches ?? []).entries()) {
        const rows = steps[i]?.tokens ?? 0
        const error = sketchError(sketch, rerun.values.subarray(row * width, (row + rows) * width), width)
        worst = Math.max(worst, error / SKETCH_TOLERANCE)
        row += rows
      }
      return worst
    },
  }
}
