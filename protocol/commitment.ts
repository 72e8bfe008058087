// A step's output commitment: a compact, noise-tolerant sketch of the hidden-state rows a hop answered, after TOPLOC
// (Prime Intellect, 2025). The receipt signs its sha256 (ReceiptBody.commit); the sketch itself is a function of the
// answer's bytes, so whoever holds the answer recomputes it, and an audit holding only the step's inputs and sketches
// re-runs them all as one prefill and compares every row.
import { type Frame, SamplingParams, sidePerToken, splitPayload } from './frames'
import { hiddenFloats } from './seam'

/** Values kept of each row: its largest by magnitude. */
export const SKETCH_K = 8
/** Bytes per kept value: its index (uint32) and value (float32), little-endian. */
const ENTRY_BYTES = 8

/**
 * How far an honest re-run's row may fall from a sketch of it (sketchError). bench/seam-tolerance.ts compares the
 * sketch of a host's answer (f16 seams, a prefill then single-token steps) with the f32 reference run a block at a
 * time, a wider gap than between two hosts: the honest worst is 0.025 (llama q4_0 8×256) with ggml's AVX-512 kernels
 * and with its AVX2 (haswell) ones alike, about 4× below. Lies that save work are far above it: zeros 0.96, skipping
 * a block 0.16, noise of half the signal 0.31; noise of a tenth (0.045 to 0.065) passes, as under SEAM_TOLERANCE.
 */
export const SKETCH_TOLERANCE = 0.1

/** The kept values of a row of `width`: min(SKETCH_K, width). */
export function sketchWidth(width: number): number {
  return Math.min(SKETCH_K, width)
}

/** The sketch's length for `rows` rows of `width` values. */
export function sketchBytes(rows: number, width: number): number {
  return rows * sketchWidth(width) * ENTRY_BYTES
}

/**
 * The sketch of `rows` rows of `width` values each: per row, the SKETCH_K largest by magnitude (ties to the lower
 * index), in that order, as (index, value). Deterministic from the values, so it is recomputed, never trusted.
 */
export function sketchRows(values: ArrayLike<number>, width: number): Uint8Array {
  const rows = width > 0 ? Math.floor(values.length / width) : 0
  const k = sketchWidth(width)
  const out = new DataView(new ArrayBuffer(sketchBytes(rows, width)))
  const top = new Int32Array(k)
  for (let row = 0; row < rows; row++) {
    const base = row * width
    topIndices(values, base, width, top)
    for (let j = 0; j < k; j++) {
      const at = (row * k + j) * ENTRY_BYTES
      const index = top[j] as number
      out.setUint32(at, index, true)
      out.setFloat32(at + 4, values[base + index] as number, true)
    }
  }
  return new Uint8Array(out.buffer)
}

/** Fills `top` with the indices of the row's largest magnitudes, largest first (ties: lower index first). */
function topIndices(values: ArrayLike<number>, base: number, width: number, top: Int32Array): void {
  const k = top.length
  const kept = new Float64Array(k)
  let filled = 0
  // the smallest magnitude kept once `top` is full: most values fall below it and cost one comparison
  let floor = -1
  for (let i = 0; i < width; i++) {
    const m = Math.abs(values[base + i] as number)
    const v = Number.isNaN(m) ? Number.POSITIVE_INFINITY : m
    if (filled === k && !(v > floor)) continue
    let j = filled < k ? filled++ : k - 1
    while (j > 0 && v > (kept[j - 1] as number)) {
      top[j] = top[j - 1] as number
      kept[j] = kept[j - 1] as number
      j--
    }
    top[j] = i
    kept[j] = v
    if (filled === k) floor = kept[k - 1] as number
  }
}

/**
 * How far `rerun` (the rows re-computed, `width` values each) is from what `sketch` claims of them: per row, the
 * larger of ‖claimed − re-run at the claimed indices‖ over the L2 norm of the re-run's k largest, and how far the
 * claimed indices' re-run magnitudes fall below the re-run's own k-th largest, over it; the worst row. Infinity when
 * the sketch's shape is not the rows' or anything is not finite.
 */
export function sketchError(sketch: Uint8Array, rerun: ArrayLike<number>, width: number): number {
  const rows = width > 0 ? rerun.length / width : 0
  if (!Number.isInteger(rows) || sketch.byteLength !== sketchBytes(rows, width)) return Number.POSITIVE_INFINITY
  const k = sketchWidth(width)
  const view = new DataView(sketch.buffer, sketch.byteOffset, sketch.byteLength)
  const top = new Int32Array(k)
  const seen = new Set<number>()
  let worst = 0
  for (let row = 0; row < rows; row++) {
    const base = row * width
    topIndices(rerun, base, width, top)
    let norm = 0
    for (const i of top) norm += (rerun[base + i] as number) ** 2
    norm = Math.sqrt(norm)
    const kth = Math.abs(rerun[base + (top[k - 1] as number)] as number)
    let diff = 0
    let miss = 0
    seen.clear()
    for (let j = 0; j < k; j++) {
      const at = (row * k + j) * ENTRY_BYTES
      const index = view.getUint32(at, true)
      const claimed = view.getFloat32(at + 4, true)
      if (index >= width || seen.has(index) || !Number.isFinite(claimed)) return Number.POSITIVE_INFINITY
      seen.add(index)
      const actual = rerun[base + index] as number
      diff += (claimed - actual) ** 2
      miss = Math.max(miss, kth - Math.abs(actual))
    }
    const e = Math.max(Math.sqrt(diff) / (norm > 0 ? norm : 1), miss / (kth > 0 ? kth : 1))
    if (!Number.isFinite(e)) return Number.POSITIVE_INFINITY
    if (e > worst) worst = e
  }
  return worst
}

/** The sketch of a hidden-state answer's rows (its side values aside); undefined for any other answer. */
export function frameSketch(frame: Frame): Uint8Array | undefined {
  if (frame.kind !== 'hidden' || (frame.dtype !== 'f16' && frame.dtype !== 'f32') || frame.tokens === 0)
    return undefined
  const values = hiddenFloats(splitPayload(frame.payload, frame.tokens, sidePerToken(frame)).values, frame.dtype)
  if (values === undefined || values.length !== frame.tokens * frame.width) return undefined
  return sketchRows(values, frame.width)
}

/**
 * What a last hop commits to in every receipt of a sampling session (ReceiptBody.commit is its sha256): the session's
 * sampling as both sides parse it (the same schema, so the same JSON). A draw depends on the logits, these parameters
 * and the position alone (host/serving/last-hop-sampler.ts), so an audit re-runs the step with them and compares the
 * token; the commitment keeps a client from handing in other parameters than the host sampled with.
 */
export function samplingCommitment(sampling: SamplingParams | undefined): Uint8Array {
  if (sampling === undefined) return new TextEncoder().encode(JSON.stringify(SamplingParams.parse({})))
  // encoded once per session's parameters (every receipt of a last hop commits to them): the bytes are only hashed
  let bytes = commitments.get(sampling)
  if (bytes === undefined) {
    bytes = new TextEncoder().encode(JSON.stringify(SamplingParams.parse(sampling)))
    commitments.set(sampling, bytes)
  }
  return bytes
}
const commitments = new WeakMap<SamplingParams, Uint8Array>()

/**
 * How much less likely than the re-run's own pick a greedy token may be, in nats of the re-run's log-probabilities,
 * and still be a tie rather than a lie: two hosts' logits differ by the seams' rounding, so a near-tie may fall either
 * way. A lie that saves work or steers the answer picks a token far down (bench:audit prints the margins it saw).
 */
export const GREEDY_TIE_NATS = 0.05
