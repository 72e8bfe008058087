import { describe, expect, it } from 'vitest'
import { SKETCH_K, SKETCH_TOLERANCE, sketchBytes, sketchError, sketchRows } from './commitment'

/** Rows of `width` deterministic values, a few of them large, as hidden states are. */
function rows(count: number, width: number, seed = 1): Float32Array {
  let s = seed
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32 - 0.5
  }
  const out = new Float32Array(count * width)
  for (let i = 0; i < out.length; i++) out[i] = next() * (i % 17 === 3 ? 20 : 1)
  return out
}

describe('output commitments (sketches of hidden rows)', () => {
  it('keeps each row’s largest values by magnitude, and the same values give the same bytes', () => {
    const width = 64
    const values = rows(3, width)
    const sketch = sketchRows(values, width)
    expect(sketch.byteLength).toBe(sketchBytes(3, width))
    const view = new DataView(sketch.buffer)
    for (let row = 0; row < 3; row++) {
      const magnitudes = [...values.subarray(row * width, (row + 1) * width)].map(Math.abs).sort((a, b) => b - a)
      for (let j = 0; j < SKETCH_K; j++) {
        const index = view.getUint32((row * SKETCH_K + j) * 8, true)
        expect(Math.abs(values[row * width + index] as number)).toBe(Math.fround(magnitudes[j] as number))
      }
    }
    expect(sketchRows(Float32Array.from(values), width)).toEqual(sketch)
  })

  it('accepts the same rows recomputed with f16-sized noise, and refuses rows a liar changed', () => {
    const width = 128
    const honest = rows(16, width)
    const sketch = sketchRows(honest, width)
    expect(sketchError(sketch, honest, width)).toBe(0)
    // relative noise of 1e-3 per value, about what f16 seams and another batch shape add
    const noisy = honest.map((v, i) => v * (1 + 1e-3 * Math.sin(i)))
    expect(sketchError(sketch, noisy, width)).toBeLessThan(SKETCH_TOLERANCE / 10)
    // a liar's answer: zeros, other rows, or its large values scaled
    expect(sketchError(sketchRows(new Float32Array(honest.length), width), honest, width)).toBeGreaterThan(
      5 * SKETCH_TOLERANCE,
    )
    expect(sketchError(sketchRows(rows(16, width, 2), width), honest, width)).toBeGreaterThan(SKETCH_TOLERANCE)
    const scaled = honest.map((v) => v * 1.2)
    expect(sketchError(sketchRows(scaled, width), honest, width)).toBeGreaterThan(SKETCH_TOLERANCE)
    // one row changed among 16 is enough
    const oneRow = Float32Array.from(honest)
    oneRow.fill(0, 5 * width, 6 * width)
    expect(sketchError(sketchRows(oneRow, width), honest, width)).toBeGreaterThan(5 * SKETCH_TOLERANCE)
  })

  it('is infinitely far when its shape is not the rows’ or a value is not finite', () => {
    const width = 32
    const honest = rows(4, width)
    const sketch = sketchRows(honest, width)
    expect(sketchError(sketch.subarray(8), honest, width)).toBe(Number.POSITIVE_INFINITY)
    expect(sketchError(sketch, honest.subarray(width), width)).toBe(Number.POSITIVE_INFINITY)
    const nan = Float32Array.from(honest)
    nan[3] = Number.NaN
    expect(sketchError(sketch, nan, width)).toBe(Number.POSITIVE_INFINITY)
    // an index past the row, or twice the same index, is no sketch of it
    const bad = new Uint8Array(sketch)
    new DataView(bad.buffer).setUint32(0, width, true)
    expect(sketchError(bad, honest, width)).toBe(Number.POSITIVE_INFINITY)
    const twice = new Uint8Array(sketch)
    new DataView(twice.buffer).setUint32(8, new DataView(twice.buffer).getUint32(0, true), true)
    expect(sketchError(twice, honest, width)).toBe(Number.POSITIVE_INFINITY)
  })

  it('keeps every value of a row narrower than the sketch', () => {
    const values = Float32Array.from([0.5, -2, 1])
    expect(sketchBytes(1, 3)).toBe(24)
    expect(sketchError(sketchRows(values, 3), values, 3)).toBe(0)
  })

  // a sketch is recomputed by every checker: the order must be exactly a full sort's
  it('orders equal magnitudes by index and NaN above all, as a full sort would', () => {
    const width = 40
    const values = new Float32Array(width)
    for (let i = 0; i < width; i++) values[i] = (i % 5) - 2 // magnitudes 2, 1, 0, 1, 2: many ties
    values[7] = Number.NaN
    values[31] = -9
    const sketch = new DataView(sketchRows(values, width).buffer)
    const rank = (i: number) =>
      Number.isNaN(values[i] as number) ? Number.POSITIVE_INFINITY : Math.abs(values[i] as number)
    const expected = [...Array(width).keys()].sort((a, b) => rank(b) - rank(a) || a - b).slice(0, SKETCH_K)
    expect([...Array(SKETCH_K).keys()].map((j) => sketch.getUint32(j * 8, true))).toEqual(expected)
  })
})
