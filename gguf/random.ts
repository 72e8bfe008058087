/**
 * sfc32: a small, fast, well-tested 32-bit PRNG. Deterministic across platforms, which is the
 * point: the same seed writes the same model bytes.
 */
export class Sfc32 {
  private a: number
  private b: number
  private c: number
  private d = 1

  constructor(seed: number, stream: number) {
    this.a = seed >>> 0
    this.b = stream >>> 0
    this.c = (seed ^ 0x9e3779b9) >>> 0
    for (let i = 0; i < 15; i++) this.next()
  }

  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** Uniform in [-1, 1). */
  signed(): number {
    return this.next() / 2147483648 - 1
  }

  fill(words: Uint32Array): void {
    for (let i = 0; i < words.length; i++) words[i] = this.next()
  }
}

/** FNV-1a of a string: turns a tensor name into a stream id. */
export function hashName(name: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)

/** IEEE half-precision bits of a number, rounded to nearest even (as ggml's GGML_FP32_TO_FP16). */
export function toHalf(value: number): number {
  f32[0] = value
  const x = u32[0] ?? 0
  const sign = (x >>> 16) & 0x8000
  const exp = (x >>> 23) & 0xff
  let mant = x & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0)
  let e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    mant |= 0x800000
    const shift = 14 - e
    const half = 1 << (shift - 1)
    let m = mant >>> shift
    const rest = mant & ((1 << shift) - 1)
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
