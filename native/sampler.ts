// Token sampling at the last hop, in llama.cpp's default chain order:
// repeat penalty -> top-k -> top-p -> min-p -> temperature -> draw (greedy when temperature <= 0).
import { ShardRuntimeError } from './errors'
import { bestIds, byLogit, drawToken } from './sampler-draw'

export type SampleParams = {
  /** <= 0 (the default) picks the most likely token. */
  temperature?: number
  topK?: number
  topP?: number
  minP?: number
  repeatPenalty?: {
    /** > 1 discourages repeats; 1 disables. */
    penalty: number
    /** Only the last `lastN` tokens of the history count (default 64). */
    lastN?: number
  }
  /** Seeds the session's generator on the first sample or when it changes. */
  seed?: number
  /**
   * OpenAI's penalties over `counts`, the generated tokens'
   * counts: logit -= count × frequency + (count > 0) × presence.
   */
  presencePenalty?: number
  frequencyPenalty?: number
  counts?: ReadonlyMap<number, number>
  /** How many of the most likely tokens to return with their log-probabilities (0: none). */
  topLogprobs?: number
  /**
   * A constraint (a grammar): only tokens it allows may be chosen. Candidates are checked in the order the
   * sampler would take them (logit order when greedy; draw, refuse, draw again otherwise) until one fits.
   */
  allow?: (token: number) => boolean
}

export type Sampled = {
  token: number
  /** log-probability of the token under the model's distribution (before penalties and temperature) */
  logprob: number
  /** The `topLogprobs` most likely tokens under the same distribution, most likely first. */
  top?: { token: number; logprob: number }[]
}

/** Draws refused by a constraint before the rest of the candidates are taken in logit order. */
const MAX_REFUSED_DRAWS = 32

/** A small deterministic generator (mulberry32): same seed, same draws, on every host. */
export class SeededRandom {
  private state: number
  constructor(readonly seed: number) {
    this.state = seed >>> 0
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function logSoftmaxAt(logits: Float32Array, token: number): number {
  let max = Number.NEGATIVE_INFINITY
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i] as number)
  let sum = 0
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] as number) - max)
  return (logits[token] as number) - max - Math.log(sum)
}

export function softmax(logits: Float32Array): Float64Array {
  let max = Number.NEGATIVE_INFINITY
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i] as number)
  const out = new Float64Array(logits.length)
  let sum = 0
  for (let i = 0; i < logits.length; i++) {
    const e = Math.exp((logits[i] as number) - max)
    out[i] = e
    sum += e
  }
  for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / sum
  return out
}

function check(params: SampleParams): void {
  const bad = (what: string, value: unknown) => {
    throw new ShardRuntimeError('BAD_SAMPLER', `sampler ${what} is out of range: ${String(value)}`, {
      [what]: String(value),
    })
  }
  if (params.temperature !== undefined && !Number.isFinite(params.temperature)) bad('temperature', params.temperature)
  if (params.topK !== undefined && !(Number.isInteger(params.topK) && params.topK >= 0)) bad('topK', params.topK)
  if (params.topP !== undefined && !(params.topP > 0 && params.topP <= 1)) bad('topP', params.topP)
  if (params.minP !== undefined && !(params.minP >= 0 && params.minP <= 1)) bad('minP', params.minP)
  if (params.repeatPenalty && !(params.repeatPenalty.penalty > 0)) bad('repeatPenalty', params.repeatPenalty.penalty)
  if (
    params.topLogprobs !== undefined &&
    !(Number.isInteger(params.topLogprobs) && params.topLogprobs >= 0 && params.topLogprobs <= 20)
  )
    bad('topLogprobs', params.topLogprobs)
}

/** The `n` largest log-probabilities of `logits`, most likely first. */
export function topLogprobs(logits: Float32Array, n: number): { token: number; logprob: number }[] {
  let max = Number.NEGATIVE_INFINITY
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i] as number)
  let sum = 0
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] as number) - max)
  const lse = max + Math.log(sum)
  return bestIds(logits, n).map((token) => ({ token, logprob: (logits[token] as number) - lse }))
}

function penalized(logits: Float32Array, params: SampleParams, history: readonly number[]): Float32Array {
  let work = logits
  const rp = params.repeatPenalty
  if (rp && rp.penalty !== 1 && history.length > 0) {
    work = Float32Array.from(logits)
    const recent = new Set(history.slice(-(rp.lastN ?? 64)))
    for (const t of recent) {
      if (t < 0 || t >= work.length) continue
      const l = work[t] as number
      work[t] = l > 0 ? l / rp.penalty : l * rp.penalty
    }
  }
  const presence = params.presencePenalty ?? 0
  const frequency = params.frequencyPenalty ?? 0
  if ((presence !== 0 || frequency !== 0) && params.counts !== undefined && params.counts.size > 0) {
    if (work === logits) work = Float32Array.from(logits)
    for (const [t, c] of params.counts)
      if (t >= 0 && t < work.length && c > 0) work[t] = (work[t] as number) - c * frequency - presence
  }
  return work
}

/** The largest logit among `ids` (all when undefined). */
function largest(work: Float32Array, ids: readonly number[] | undefined): number {
  let max = Number.NEGATIVE_INFINITY
  const n = ids?.length ?? work.length
  for (let k = 0; k < n; k++) max = Math.max(max, work[ids === undefined ? k : (ids[k] as number)] as number)
  return max
}

/** The smallest prefix (in sampler order) of the candidates whose probability at T = 1 reaches `topP`. */
function nucleus(work: Float32Array, ids: number[] | undefined, topP: number): number[] {
  const n = ids?.length ?? work.length
  const max = largest(work, ids)
  const e = new Float64Array(n)
  let sum = 0
  for (let k = 0; k < n; k++) {
    e[k] = Math.exp((work[ids === undefined ? k : (ids[k] as number)] as number) - max)
    sum += e[k] as number
  }
  // A token of the nucleus leaves more than 1 − topP of the mass from it on, in at most n tokens no heavier than it:
  // only tokens above (1 − topP) / n of the mass can be in it, so only they are sorted.
  const floor = ((1 - topP) / n) * sum
  const candidates: number[] = []
  for (let k = 0; k < n; k++) if ((e[k] as number) > floor) candidates.push(ids === undefined ? k : (ids[k] as number))
  const ordered = byLogit(work, candidates)
  let cum = 0
  for (let i = 0; i < ordered.length; i++) {
    cum += Math.exp((work[ordered[i] as number] as number) - max) / sum
    if (cum >= topP) return ordered.slice(0, i + 1)
  }
  return ordered // rounding kept the sum a hair under topP: every candidate
}

/** The candidates at least `minP` times as likely as the most likely, in sampler order. */
function aboveMinP(work: Float32Array, ids: number[] | undefined, minP: number): number[] {
  const n = ids?.length ?? work.length
  const max = largest(work, ids)
  // p ≥ p_max · minP  ⇔  logit ≥ max + ln(minP)
  const floor = max + Math.log(minP)
  const kept: number[] = []
  for (let k = 0; k < n; k++) {
    const id = ids === undefined ? k : (ids[k] as number)
    if ((work[id] as number) >= floor) kept.push(id)
  }
  return ids === undefined ? byLogit(work, kept) : kept
}

function stuck(): never {
  throw new ShardRuntimeError(
    'GRAMMAR_STUCK',
    'no token of the vocabulary continues the grammar here; the grammar cannot be completed with this vocabulary',
  )
}

/**
 * Candidates checked in one pass before the whole vocabulary is sorted: most steps find an allowed token among them.
 */
const FIRST_CANDIDATES = 256

/**
 * The constrained choice among the rest: the first token in logit order the constraint allows. The most likely
 * FIRST_CANDIDATES are tried in order; past them, one pass over the vocabulary keeps the likeliest allowed token.
 */
function firstAllowed(work: Float32Array, allow: (token: number) => boolean, skip: ReadonlySet<number>): number {
  const first = bestIds(work, Math.min(FIRST_CANDIDATES, work.length))
  for (const id of first) if (!skip.has(id) && allow(id)) return id
  const tried = new Set(first)
  let best = -1
  for (let id = 0; id < work.length; id++) {
    if (tried.has(id) || skip.has(id) || (best !== -1 && (work[id] as number) <= (work[best] as number))) continue
    if (allow(id)) best = id
  }
  return best === -1 ? stuck() : best
}

export function sampleToken(
  logits: Float32Array,
  params: SampleParams,
  history: readonly number[],
  rng: () => number,
): Sampled {
  check(params)
  const work = penalized(logits, params, history)
  const { token, whole } = choose(work, params, rng)
  const top = params.topLogprobs ? { top: topLogprobs(logits, params.topLogprobs) } : {}
  // a draw over these very logits at temperature 1 summed logSoftmaxAt's terms already, in its order
  const logprob =
    whole !== undefined && work === logits
      ? (logits[token] as number) - whole.max - Math.log(whole.total)
      : logSoftmaxAt(logits, token)
  return { token, logprob, ...top }
}

type Chosen = { token: number; whole?: { max: number; total: number } | undefined }

function choose(work: Float32Array, params: SampleParams, rng: () => number): Chosen {
  const temperature = params.temperature ?? 0
  const allow = params.allow
  if (temperature <= 0) {
    let best = 0
    for (let i = 1; i < work.length; i++) if ((work[i] as number) > (work[best] as number)) best = i
    return { token: allow === undefined || allow(best) ? best : firstAllowed(work, allow, new Set([best])) }
  }

  const truncated = params.topK && params.topK > 0 && params.topK < work.length
  let ids: number[] | undefined = truncated ? bestIds(work, params.topK as number) : undefined
  if (params.topP !== undefined && params.topP < 1) ids = nucleus(work, ids, params.topP)
  if (params.minP !== undefined && params.minP > 0) ids = aboveMinP(work, ids, params.minP)
  const drawn = drawToken(work, ids, temperature, rng, allow, MAX_REFUSED_DRAWS)
  if ('chosen' in drawn) return { token: drawn.chosen, whole: drawn.whole }
  const { rest, refused } = drawn
  // Refused too often: the rest, in logit order (the truncated candidates first, then the whole vocabulary).
  if (allow === undefined) return stuck()
  for (const id of rest) if (allow(id)) return { token: id }
  return { token: firstAllowed(work, allow, new Set([...refused, ...rest])) }
}
