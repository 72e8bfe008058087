import { describe, expect, it } from 'vitest'
import { ShardRuntimeError } from './errors'
import { quantizeRows } from './quantize'

describe('quantizeRows: ggml_quantize_chunk from the addon', () => {
  it('writes ggml blocks: a q8_0 row keeps its largest value exactly, q4_K packs 256 values in 144 bytes', () => {
    const row = Float32Array.from({ length: 64 }, (_, i) => (i - 32) / 8)
    const q8 = Buffer.from(quantizeRows('q8_0', row, 64))
    expect(q8.length).toBe(2 * 34)
    // block 0 holds -4 .. -0.125: scale = 4 / 127, the first quant -127
    expect(q8.readInt8(2)).toBe(-127)
    const values = Float32Array.from({ length: 2 * 256 }, (_, i) => Math.sin(i))
    expect(quantizeRows('q4_K', values, 256).length).toBe(2 * 144)
    expect(quantizeRows('q6_K', values, 512).length).toBe(2 * 210)
  })

  it('refuses unknown types and rows that are not whole blocks with typed errors', () => {
    const err = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        return e as ShardRuntimeError
      }
      throw new Error('expected an error')
    }
    const badType = err(() => quantizeRows('q3_XL', new Float32Array(256), 256))
    expect(badType).toBeInstanceOf(ShardRuntimeError)
    expect(badType.code).toBe('BAD_QUANT_TYPE')
    expect(badType.message).toMatch(/cannot quantize to "q3_XL"; the quantizer writes q4_0, .*q6_K/)
    expect(err(() => quantizeRows('q4_K', new Float32Array(128), 128)).code).toBe('BAD_QUANT_INPUT')
    expect(err(() => quantizeRows('q8_0', new Float32Array(48), 32)).message).toMatch(
      /48 values are not 1 to \d+ whole rows of 32/,
    )
  })
})
