// How far two honest answers for the same hidden-state seam may differ. Hidden states cross hops as
// f16 and ggml picks different kernels for different batch shapes, so honest hosts never agree bit
// for bit; a lying one (zeros, noise, another model, skipped blocks) is far outside this.
import { fromF16 } from './f16'
import { type Seam, splitSide } from './seams'

/**
 * Largest relative RMS difference per token row an honest host's hidden states may show against the
 * publisher's f32 reference or another honest host, over f16 seams: about 4.6× the worst honest error
 * measured (bench/seam-tolerance.ts, CPU, prefill of 10 rows then two single-token steps, every range
 * of small models): 0.0017 stories260K F32; 0.012-0.014 generated llama/qwen3 q8_0 and q4_0 4×128;
 * 0.022 llama q4_0 8×256 (a 6-block range); 0.014 q8_0/q4_0 16×512; 0.018 q4_0 22×2048 (1.1B, a
 * 16-block range). Honest error grows with the range's length (about length^0.7: 0.0027 for one block
 * of the 1.1B model, 0.0185 for 16), so ranges of 40+ blocks may need more. Lies measured against it:
 * zeros 1.0, skipping one block ≥ 0.22, Gaussian noise of relative size s ≈ s (0.5 caught; 0.1 at
 * the edge; 0.05 and 0.01 pass, but noise saves a liar no work).
 */
export const SEAM_TOLERANCE = 0.1

/**
 * How far below the reference's largest logit (in logits, natural-log units) a next token may be and
 * still be an honest greedy pick over f16 seams: a probe's accept lists hold every such token. About
 * 5× the worst gap measured (bench/seam-tolerance.ts): 0 stories260K F32; 0.12 generated 4×128;
 * 0.19 llama q4_0 16×512 (a 15-block head range); 0.17 q4_0 22×2048. Accept lists then average 2-4
 * tokens (at most 19); a head host skipping one block picks outside them at 37-66% of positions.
 */
export const ACCEPT_LOGIT_MARGIN = 1

/**
 * The largest, over rows of `width` values, of ‖a − b‖ / ‖b‖ (b the reference). A row whose reference
 * is all zeros compares by ‖a‖ alone. NaN or infinity anywhere is the worst error there is.
 */
export function seamError(a: ArrayLike<number>, b: ArrayLike<number>, width: number): number {
  if (a.length !== b.length || width <= 0 || a.length % width !== 0) return Number.POSITIVE_INFINITY
  let worst = 0
  for (let row = 0; row < a.length; row += width) {
    let diff = 0
    let norm = 0
    for (let i = row; i < row + width; i++) {
      const x = a[i] as number
      const y = b[i] as number
      diff += (x - y) * (x - y)
      norm += y * y
    }
    const e = norm > 0 ? Math.sqrt(diff / norm) : Math.sqrt(diff)
    if (!Number.isFinite(e)) return Number.POSITIVE_INFINITY
    if (e > worst) worst = e
  }
  return worst
}

/**
 * Largest fraction of a token's indices (GLM-DSA's top-k cells crossing a seam) an honest answer may hold that the
 * reference's set for that token lacks: honest hosts rank the same f32 scores, so only near-ties at the k-th score
 * may swap; all the generated models' tests agree exactly. Token ids crossing a seam must be equal.
 */
export const SIDE_TOLERANCE = 0.02

/**
 * How far side values crossing `seam` (token-major; `joinSide`) differ from the reference: 1 when their lengths or any
 * token id differ, else the largest fraction, over tokens, of indices not in the reference's set for that token.
 */
export function sideError(answer: Int32Array, reference: Int32Array, seam: Seam): number {
  if (answer.length !== reference.length) return 1
  const a = splitSide(seam, answer)
  const b = splitSide(seam, reference)
  if (a.tokenIds?.some((t, i) => t !== b.tokenIds?.[i])) return 1
  const k = seam.int32PerToken
  let worst = 0
  for (let t = 0; k > 0 && t < (a.indices?.length ?? 0) / k; t++) {
    const expected = new Set(b.indices?.subarray(t * k, (t + 1) * k))
    let missing = 0
    for (const x of a.indices?.subarray(t * k, (t + 1) * k) ?? []) if (!expected.has(x)) missing++
    worst = Math.max(worst, missing / k)
  }
  return worst
}

/**
 * Hidden states as sent (f16 bits or f32, little-endian) as f32 values, copied (a received payload may
 * be an unaligned view); undefined when the bytes are not whole values, which is a wrong answer.
 */
export function hiddenFloats(payload: Uint8Array, dtype: 'f16' | 'f32'): Float32Array | undefined {
  if (payload.byteLength % (dtype === 'f16' ? 2 : 4) !== 0) return undefined
  const bytes = new Uint8Array(payload)
  return dtype === 'f16' ? fromF16(new Uint16Array(bytes.buffer)) : new Float32Array(bytes.buffer)
}

/** A seam error as people read it: "4.2 %". */
export function seamPercent(error: number): string {
  return Number.isFinite(error) ? `${(100 * error).toPrecision(2)} %` : '∞ %'
}

/** Typed arrays of one kind back to back, as one (a step's chunks, or answers' rows, in order). */
export function concatenated<T extends Float32Array | Int32Array>(parts: readonly T[], Kind: new (n: number) => T): T {
  const out = new Kind(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
