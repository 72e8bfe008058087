// Token sampling at the last hop, in llama.cpp's default chain order:
// repeat penalty -> top-k -> top-p -> min-p -> temperature -> draw (greedy when temperature <= 0).
import { ShardRuntimeError } from './errors'

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
}

export type Sampled = {
  token: number
  /** log-probability of the token under the model's distribution (before penalties and temperature) */
  logprob: number
}

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
    throw new ShardRuntimeError('BAD_SAMPLER', `sampler ${what} is out of range: ${String(value)}`, { [what]: String(value) })
  }
  if (params.temperature !== undefined && !Number.isFinite(params.temperature)) bad('temperature', params.temperature)
  if (params.topK !== undefined && !(Number.isInteger(params.topK) && params.topK >= 0)) bad('topK', params.topK)
  if (params.topP !== undefined && !(params.topP > 0 && params.topP <= 1)) bad('topP', params.topP)
  if (params.minP !== undefined && !(params.minP >= 0 && params.minP <= 1)) bad('minP', params.minP)
  if (params.repeatPenalty && !(params.repeatPenalty.penalty > 0)) bad('repeatPenalty', params.repeatPenalty.penalty)
}

export function sampleToken(logits: Float32Array, params: SampleParams, history: readonly number[], rng: () => number): Sampled {
  check(params)
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
  const temperature = params.temperature ?? 0
  if (temperature <= 0) {
    let best = 0
    for (let i = 1; i < work.length; i++) if ((work[i] as number) > (work[best] as number)) best = i
    return { token: best, logprob: logSoftmaxAt(logits, best) }
  }

  let ids = Array.from(work.keys()).sort((a, b) => (work[b] as number) - (work[a] as number))
  if (params.topK && params.topK > 0) ids = ids.slice(0, params.topK)
  const probsOf = (list: number[], temp: number) => {
    const max = work[list[0] as number] as number
    const e = list.map((id) => Math.exp(((work[id] as number) - max) / temp))
    const sum = e.reduce((a, b) => a + b, 0)
    return e.map((x) => x / sum)
  }
  if (params.topP !== undefined && params.topP < 1) {
    const p = probsOf(ids, 1)
    let cum = 0
    let keep = ids.length
    for (let i = 0; i < p.length; i++) {
      cum += p[i] as number
      if (cum >= params.topP) {
        keep = i + 1
        break
      }
    }
    ids = ids.slice(0, Math.max(1, keep))
  }
  if (params.minP !== undefined && params.minP > 0) {
    const p = probsOf(ids, 1)
    const floor = (p[0] as number) * params.minP
    ids = ids.filter((_, i) => (p[i] as number) >= floor)
  }
  const p = probsOf(ids, temperature)
  const r = rng()
  let cum = 0
  let chosen = ids[ids.length - 1] as number
  for (let i = 0; i < ids.length; i++) {
    cum += p[i] as number
    if (r < cum) {
      chosen = ids[i] as number
      break
    }
  }
  return { token: chosen, logprob: logSoftmaxAt(logits, chosen) }
}
