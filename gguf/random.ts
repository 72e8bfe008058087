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
