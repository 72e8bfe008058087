// What crosses each block boundary and where a route may change hosts: the single home of "is cut b
// allowed" and "bytes per token crossing cut b". Boundary b (1 ≤ b < nLayer) lies after block b − 1.
import { z } from 'zod'
import { MAX_SEAM_VALUES } from './limits'

/**
 * One boundary, as the manifest states it:
 * - `cut`: a hop may end (and the next begin) here;
 * - `values`: activation values per token crossing it: hidden width × streams (DeepSeek-V4's hyper-connections
 *   carry 4 streams, so 4 × hidden);
 * - `tokenIds`: the token ids cross too, because a later block needs them (DeepSeek-V4's hash-routed blocks pick
 *   experts by token id);
 * - `int32PerToken`: other int32 values per token (GLM-DSA: the top-k indices a shared-indexer block after the cut
 *   reuses from the last full-indexer block before it).
 */
export const Seam = z.object({
  cut: z.boolean(),
  values: z.number().int().positive().max(MAX_SEAM_VALUES),
  tokenIds: z.boolean(),
  int32PerToken: z.number().int().nonnegative().max(MAX_SEAM_VALUES),
})
export type Seam = z.infer<typeof Seam>

/** A manifest's seam facts; manifests from before `seams` allow every cut and carry the hidden state alone. */
export interface SeamFacts {
  readonly nLayer: number
  readonly nEmbd: number
  /** Boundaries 1..nLayer − 1, index = boundary − 1. */
  readonly seams?: readonly Seam[] | undefined
}

/** The seam at boundary b (1 ≤ b < nLayer); a manifest without `seams` carries nEmbd values at every cut. */
export function seamAt(model: SeamFacts, b: number): Seam {
  return model.seams?.[b - 1] ?? { cut: true, values: model.nEmbd, tokenIds: false, int32PerToken: 0 }
}

/**
 * Whether a hop may start or end at boundary b: 0 and nLayer always (the client's ends), others as the manifest says.
 */
export function cutAllowed(model: Pick<SeamFacts, 'nLayer' | 'seams'>, b: number): boolean {
  if (!Number.isInteger(b) || b < 0 || b > model.nLayer) return false
  if (b === 0 || b === model.nLayer) return true
  return model.seams?.[b - 1]?.cut ?? true
}

/** 1 at each boundary 0..nLayer where a hop may start or end, for the planners' sweeps. */
export function allowedCuts(model: Pick<SeamFacts, 'nLayer' | 'seams'>): Uint8Array {
  return Uint8Array.from({ length: model.nLayer + 1 }, (_, b) => (cutAllowed(model, b) ? 1 : 0))
}

/**
 * How hidden states cross this model's seams by default. `neuron pack` states f32 for mixture-of-experts models:
 * a router near a tie turns f16 rounding into another expert, and the route's tokens (and known-answer probes of
 * honest hosts) drift from llama.cpp's within a few tokens on random-weight MoE models (native/moe.test.ts).
 */
export function seamDtype(model: { readonly seamDtype?: 'f16' | 'f32' | undefined }): 'f16' | 'f32' {
  return model.seamDtype ?? 'f16'
}

/** Bytes one token sends across boundary b (1 ≤ b < nLayer), with activations as f16 (the default) or f32. */
export function seamBytesPerToken(model: SeamFacts, b: number, dtype: 'f16' | 'f32' = 'f16'): number {
  const seam = seamAt(model, b)
  return seam.values * (dtype === 'f16' ? 2 : 4) + 4 * seamSideValues(seam)
}

/** int32 values per token crossing a seam besides the hidden state, in frame order: the token id, then the indices. */
export function seamSideValues(seam: Seam): number {
  return (seam.tokenIds ? 1 : 0) + seam.int32PerToken
}

/**
 * The side values of `tokens` rows crossing `seam`, token-major:
 * each row's token id where it carries one, then its indices.
 */
export function joinSide(
  seam: Seam,
  tokens: number,
  tokenIds: ArrayLike<number> | undefined,
  indices: ArrayLike<number> | undefined,
): Int32Array {
  const per = seamSideValues(seam)
  const k = seam.int32PerToken
  const first = seam.tokenIds ? 1 : 0
  const out = new Int32Array(tokens * per)
  for (let t = 0; t < tokens; t++) {
    if (seam.tokenIds) out[t * per] = tokenIds?.[t] ?? 0
    for (let j = 0; j < k; j++) out[t * per + first + j] = indices?.[t * k + j] ?? 0
  }
  return out
}

/**
 * The token ids and indices among side values crossing `seam`
 * (`joinSide` undone); each absent where the seam carries none.
 */
export function splitSide(seam: Seam, side: Int32Array): { tokenIds?: Int32Array; indices?: Int32Array } {
  const per = seamSideValues(seam)
  if (per === 0) return {}
  const tokens = Math.floor(side.length / per)
  const k = seam.int32PerToken
  const first = seam.tokenIds ? 1 : 0
  const tokenIds = seam.tokenIds ? Int32Array.from({ length: tokens }, (_, t) => side[t * per] ?? 0) : undefined
  let indices: Int32Array | undefined
  if (k > 0) {
    indices = new Int32Array(tokens * k)
    for (let t = 0; t < tokens; t++) indices.set(side.subarray(t * per + first, t * per + first + k), t * k)
  }
  return { ...(tokenIds === undefined ? {} : { tokenIds }), ...(indices === undefined ? {} : { indices }) }
}
