// IEEE half precision, as hidden states travel on the wire and as GGUF stores F16 (round to nearest even, like F16C).

const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)

export function f32ToF16(x: number): number {
  f32[0] = x
  const bits = u32[0] as number
  const sign = (bits >>> 16) & 0x8000
  const exp = (bits >>> 23) & 0xff
  let mant = bits & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0) // inf / nan
  let e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00 // overflow -> inf
  if (e <= 0) {
    if (e < -10) return sign // underflow -> signed zero
    mant |= 0x800000 // subnormal: shift in the implicit bit
    const shift = 14 - e
    const half = 1 << (shift - 1)
    const rest = mant & ((1 << shift) - 1)
    let m = mant >>> shift
    if (rest > half || (rest === half && m & 1)) m++
    return sign | m
  }
  let m = mant >>> 13
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m++
    if (m === 0x400) {
      m = 0
      e++
      if (e >= 0x1f) return sign | 0x7c00
    }
  }
  return sign | (e << 10) | m
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1
  const exp = (h >>> 10) & 0x1f
  const mant = h & 0x3ff
  if (exp === 0) return sign * mant * 2 ** -24
  if (exp === 0x1f) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY
  return sign * (1 + mant / 1024) * 2 ** (exp - 15)
}

export function toF16(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length)
  for (let i = 0; i < values.length; i++) out[i] = f32ToF16(values[i] as number)
  return out
}

/** Every half's value (256 KiB, made on first use): a hidden row of thousands converts by lookup. */
let halves: Float32Array | undefined
function halfTable(): Float32Array {
  if (halves !== undefined) return halves
  halves = new Float32Array(0x10000)
  for (let h = 0; h < 0x10000; h++) halves[h] = f16ToF32(h)
  return halves
}

export function fromF16(values: Uint16Array): Float32Array {
  const table = halfTable()
  const out = new Float32Array(values.length)
  for (let i = 0; i < values.length; i++) out[i] = table[values[i] as number] as number
  return out
}
