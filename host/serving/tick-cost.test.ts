// The batcher's measure of what its graphs cost, from which a prompt's chunk is cut (step-batcher.ts).
import { describe, expect, it } from 'vitest'
import { TickCost } from './tick-cost'

describe('TickCost', () => {
  it('knows no chunk until a decode graph and a graph with prompt rows beside it have run', () => {
    const cost = new TickCost()
    expect(cost.rowsWithin(1.5)).toBeUndefined()
    cost.mixed(8, 30)
    expect(cost.rowsWithin(1.5)).toBeUndefined()
    cost.decodeOnly(20)
    expect(cost.rowsWithin(1.5)).toBeUndefined()
    cost.mixed(8, 36)
    // 8 rows added 16 ms to a 20 ms graph: 2 ms a row, so 5 rows make 30 ms (1.5×)
    expect(cost.rowsWithin(1.5)).toBe(5)
    expect(cost.rowsWithin(2)).toBe(10)
  })

  it('follows the prompt as its rows grow dearer (they attend to more of it), and the machine as it slows', () => {
    const cost = new TickCost()
    cost.decodeOnly(20)
    for (let i = 0; i < 50; i++) cost.mixed(8, 36)
    // 2 ms a row: 0.55 × 20 / 2 = 5.5 rows within 1.55×
    expect(cost.rowsWithin(1.55)).toBe(5)
    // later chunks: 4 ms a row
    for (let i = 0; i < 100; i++) cost.mixed(8, 52)
    expect(cost.rowsWithin(1.55)).toBe(2)
    // decode graphs alone now take twice as long (another process took a core), and prompt rows 4 ms
    for (let i = 0; i < 100; i++) cost.decodeOnly(40)
    for (let i = 0; i < 100; i++) cost.mixed(8, 72)
    expect(cost.rowsWithin(1.55)).toBe(5)
  })

  it('ignores a graph that reports no time or no rows', () => {
    const cost = new TickCost()
    cost.decodeOnly(Number.NaN)
    cost.decodeOnly(-1)
    expect(cost.rowsWithin(1.5)).toBeUndefined()
    cost.decodeOnly(20)
    cost.mixed(0, 30)
    cost.mixed(8, Number.POSITIVE_INFINITY)
    expect(cost.rowsWithin(1.5)).toBeUndefined()
  })
})
