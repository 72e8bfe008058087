// A host's answers to a known-answer probe, in the shapes the tracker drives it: a prefill of all but
// the last two tokens, then two single-token steps, hidden states crossing as f16. Honest, or lying
// in one of the ways a check must catch. Shared by the probe tests and bench/seam-tolerance.ts.
import { SeededRandom } from '../native/sampler'
import type { ShardRuntime } from '../native/shard-runtime'
import { fromF16, toF16 } from '../protocol/f16'

export type ProbeLie = { kind: 'honest' } | { kind: 'zeros' } | { kind: 'noise'; size: number } | { kind: 'skip-block' }

export type RangeAnswer = { kind: 'hidden'; data: Float32Array } | { kind: 'logits'; data: Float32Array; cols: number }

/**
 * What a host serving `blocks` [a, b) (its runtime loaded with embed = a === 0, head = b === nLayer)
 * answers for `tokens`, given the reference input to block a (f32, sent as f16) when a > 0. A
 * `skip-block` liar skips block a (passing its input through when it serves only that one), or the
 * last block when a = 0 (undefined when it cannot: [0, 1), or [0, b) with the head); the other lies
 * replace an honest hidden answer.
 */
export async function answerRange(
  runtime: ShardRuntime,
  blocks: readonly [number, number],
  tokens: readonly number[],
  input: Float32Array | undefined,
  nEmbd: number,
  lie: ProbeLie = { kind: 'honest' },
  seed = 1,
): Promise<RangeAnswer | undefined> {
  const [a, b] = blocks
  const n = tokens.length
  const wire = input === undefined ? undefined : toF16(input)
  let run: [number, number] = [a, b]
  if (lie.kind === 'skip-block') {
    const head = runtime.info().head && b === runtime.info().nLayer
    if (wire !== undefined && b - a === 1 && !head) return { kind: 'hidden', data: fromF16(wire) }
    if (wire !== undefined && b - a > 1) run = [a + 1, b]
    else if (wire === undefined && b > 1 && !head) run = [0, b - 1]
    else return undefined
  }
  const session = runtime.openSession({ maxTokens: n, blocks: run })
  try {
    const parts: (Float32Array | Uint16Array)[] = []
    let cols = nEmbd
    let logits = false
    for (const [from, to] of [
      [0, n - 2],
      [n - 2, n - 1],
      [n - 1, n],
    ] as const) {
      const x = wire === undefined ? Int32Array.from(tokens.slice(from, to)) : wire.subarray(from * nEmbd, to * nEmbd)
      const out = await session.forward(x, { positions: from, allLogits: true, hiddenType: 'f16' })
      parts.push(out.data)
      cols = out.cols
      logits = out.kind === 'logits'
    }
    const data = new Float32Array(n * cols)
    let at = 0
    for (const p of parts) {
      data.set(p instanceof Uint16Array ? fromF16(p) : p, at)
      at += p.length
    }
    if (logits) return { kind: 'logits', data, cols }
    return { kind: 'hidden', data: lieAbout(data, nEmbd, lie, seed) }
  } finally {
    session.close()
  }
}

/**
 * An honest hidden answer turned into the lie (what the liar would
 * send, after its f16 rounding); `skip-block` needs answerRange.
 */
export function lieAbout(data: Float32Array, width: number, lie: ProbeLie, seed: number): Float32Array {
  if (lie.kind === 'zeros') return new Float32Array(data.length)
  if (lie.kind !== 'noise') return data
  const rng = new SeededRandom(seed)
  const out = new Float32Array(data.length)
  for (let row = 0; row < data.length; row += width) {
    let sq = 0
    for (let i = row; i < row + width; i++) sq += (data[i] as number) ** 2
    const rms = Math.sqrt(sq / width)
    for (let i = row; i < row + width; i++) out[i] = (data[i] as number) + lie.size * rms * gaussian(rng)
  }
  return fromF16(toF16(out))
}

function gaussian(rng: SeededRandom): number {
  return Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next())
}

/** Each row's argmax. */
export function argmaxRows(logits: Float32Array, cols: number): number[] {
  const out: number[] = []
  for (let row = 0; row < logits.length; row += cols) {
    let best = 0
    for (let t = 1; t < cols; t++) if ((logits[row + t] as number) > (logits[row + best] as number)) best = t
    out.push(best)
  }
  return out
}

/** The largest, over rows, of how far below the reference's best logit the reference logit of `picks[row]` is. */
export function logitGap(reference: Float32Array, cols: number, picks: readonly number[]): number {
  let worst = 0
  for (const [r, pick] of picks.entries()) {
    const row = reference.subarray(r * cols, (r + 1) * cols)
    let max = Number.NEGATIVE_INFINITY
    for (const x of row) if (x > max) max = x
    worst = Math.max(worst, max - (row[pick] as number))
  }
  return worst
}
