import { describe, expect, it } from 'vitest'
import { f16ToF32, fromF16 } from './f16'

describe('half precision', () => {
  it('converts every one of the 65 536 halves by table exactly as bit by bit (NaNs stay NaN)', () => {
    const all = new Uint16Array(0x10000)
    for (let h = 0; h < all.length; h++) all[h] = h
    const table = fromF16(all)
    let differing = 0
    for (let h = 0; h < all.length; h++) if (!Object.is(table[h], Math.fround(f16ToF32(h)))) differing++
    expect(differing).toBe(0)
  })
})
