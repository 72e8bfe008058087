// The sampler's draw without a whole-vocabulary sort must choose exactly what the plain definition chooses: sort every
// token by logit (largest first, ties by lower id), walk the cumulative weights to the random number, refuse and draw
// again. The definition is written out here, slow and obvious, and compared over flat, peaked and tied logits.
import { describe, expect, it } from 'vitest'
import { logSoftmaxAt, SeededRandom, sampleToken } from './sampler'
import { byLogit, drawToken } from './sampler-draw'

function definition(work: Float32Array, temperature: number, rng: () => number, allow?: (t: number) => boolean) {
  let ids = Array.from(work.keys()).sort((a, b) => (work[b] as number) - (work[a] as number))
  for (let draws = 0; ids.length > 0 && draws < 32; draws++) {
    const max = work[ids[0] as number] as number
    const e = ids.map((id) => Math.exp(((work[id] as number) - max) / temperature))
    const sum = e.reduce((a, b) => a + b, 0)
    const r = rng()
    let cum = 0
    let at = ids.length - 1
    for (let i = 0; i < ids.length; i++) {
      cum += (e[i] as number) / sum
      if (r < cum) {
        at = i
        break
      }
    }
    const chosen = ids[at] as number
    if (allow === undefined || allow(chosen)) return chosen
    ids = ids.filter((_, i) => i !== at)
  }
  return -1
}

function logits(n: number, kind: 'flat' | 'peaked' | 'tied', seed: number): Float32Array {
  const r = new SeededRandom(seed)
  return Float32Array.from({ length: n }, () =>
    kind === 'flat'
      ? r.next() * 2
      : kind === 'peaked'
        ? (r.next() < 0.01 ? 20 : 0) + r.next() * 40 - 30
        : Math.round(r.next() * 4) - 2,
  )
}

describe('the sampler’s draw over a whole vocabulary', () => {
  it('orders by logit as a stable sort does: negatives, zeros of both signs, infinities and ties by lower id', () => {
    const values = Float32Array.from([
      0,
      -0,
      3,
      -1,
      Number.POSITIVE_INFINITY,
      3,
      -Number.MAX_VALUE,
      1e-30,
      -1e-30,
      -Infinity,
    ])
    const stable = Array.from(values.keys()).sort((a, b) => (values[b] as number) - (values[a] as number))
    // a stable sort keeps 0 and -0 in id order (equal); the packed keys put +0 first, which only swaps equal values
    expect(byLogit(values).map((i) => values[i])).toEqual(stable.map((i) => values[i]))
    expect(byLogit(values, [3, 5, 2]).slice(0, 2)).toEqual([2, 5])
  })

  it('orders a whole vocabulary (its radix sort) and any subset exactly as a stable sort by logit does', () => {
    for (const kind of ['flat', 'peaked', 'tied'] as const) {
      const values = logits(5000, kind, 7)
      values[10] = -0
      values[11] = Number.NEGATIVE_INFINITY
      values[12] = Number.POSITIVE_INFINITY
      // largest first (+0 before -0, as their bits order them), ties by lower id
      const negativeZero = (i: number) => (Object.is(values[i], -0) ? 1 : 0)
      const stable = (ids: number[]) =>
        ids.sort((a, b) => (values[b] as number) - (values[a] as number) || negativeZero(a) - negativeZero(b) || a - b)
      const every = Array.from(values.keys())
      expect(byLogit(values), kind).toEqual(stable([...every]))
      // a rising subset (radix), one in another order and a short one (a numeric sort of packed keys)
      const rising = every.filter((i) => i % 3 !== 1)
      expect(byLogit(values, rising), kind).toEqual(stable([...rising]))
      const shuffled = [...rising].reverse()
      expect(byLogit(values, shuffled), kind).toEqual(stable([...rising]))
      expect(byLogit(values, rising.slice(0, 100)), kind).toEqual(stable(rising.slice(0, 100)))
    }
  })

  it('chooses exactly the token the plain definition chooses, refusals included, over 3 kinds of logits', () => {
    let compared = 0
    for (const kind of ['flat', 'peaked', 'tied'] as const) {
      for (let seed = 1; seed <= 40; seed++) {
        const work = logits(seed % 2 === 0 ? 3000 : 20_000, kind, seed)
        for (const temperature of [0.5, 1, 1.7]) {
          const allow = seed % 3 === 0 ? (t: number) => t % 5 === 0 : undefined
          const a = new SeededRandom(seed)
          const b = new SeededRandom(seed)
          const drawn = drawToken(work, undefined, temperature, () => a.next(), allow, 32)
          expect('chosen' in drawn ? drawn.chosen : -1, `${kind} ${seed} ${temperature}`).toBe(
            definition(work, temperature, () => b.next(), allow),
          )
          compared++
        }
      }
    }
    expect(compared).toBe(360)
  })

  it('reaches a light tail (1e-8 of the mass) when the random number falls there, and still matches', () => {
    // 10 tokens at 0 and 1 000 between -24 and -23: the tail holds 1e-8 of the mass, each of its tokens 1e-11 (far
    // above the cumulative sums' rounding), in groups of their own that the draw passes whole until it lands.
    const r = new SeededRandom(3)
    const work = Float32Array.from({ length: 1010 }, (_, i) => (i % 101 === 0 ? 0 : -23 - r.next()))
    const tail = () => 1 - 0.5e-8
    const drawn = drawToken(work, undefined, 1, tail, undefined, 32)
    const chosen = 'chosen' in drawn ? drawn.chosen : -1
    expect(chosen).toBe(definition(work, 1, tail))
    expect(work[chosen]).toBeLessThan(-23)
  })

  it("gives a temperature-1 token logSoftmaxAt's log-probability, to the last bit, from the draw's own sums", () => {
    for (const kind of ['flat', 'peaked', 'tied'] as const) {
      const work = logits(20_000, kind, 5)
      const rng = new SeededRandom(9)
      for (let k = 0; k < 20; k++) {
        const { token, logprob } = sampleToken(work, { temperature: 1 }, [], () => rng.next())
        expect(logprob, `${kind} ${k}`).toBe(logSoftmaxAt(work, token))
      }
    }
  })
})
