import { describe, expect, it } from 'vitest'
import { layerCount, layerRange, plainRanges, UNAUDITED_EXPLAINED } from './words'

describe('the words screens share', () => {
  it('says a 0-based half-open block range as the layers people count from 1', () => {
    expect(layerRange([0, 5], 5)).toBe('layers 1–5 of 5')
    expect(layerRange([2, 5], 5)).toBe('layers 3–5 of 5')
    expect(layerRange([2, 5])).toBe('layers 3–5')
    expect(layerRange([4, 5], 5)).toBe('layer 5 of 5')
  })

  it("says the ranges in the tracker's messages as layers", () => {
    expect(plainRanges('smaller range: only the weakest blocks [1, 3), less memory')).toBe(
      'smaller range: only the weakest layers 2–3, less memory',
    )
    expect(plainRanges('no route for [4, 5) of 5')).toBe('no route for layer 5 of 5')
    expect(plainRanges('nothing to say')).toBe('nothing to say')
  })

  it('counts layers in the singular and plural', () => {
    expect(layerCount(1)).toBe('1 layer')
    expect(layerCount(3)).toBe('3 layers')
  })

  it('explains "unaudited" in one plain sentence', () => {
    expect(UNAUDITED_EXPLAINED).toMatch(/^Unaudited: no other computer serves those layers/)
    expect(UNAUDITED_EXPLAINED.match(/\./g)).toHaveLength(1)
  })
})
