// The batcher's measure of what its graphs cost, from which a prompt's chunk is cut (step-batcher.ts).
import { describe, expect, it } from 'vitest'
import { TickCost } from './tick-cost'

/** What a chunk of `rows` from `start` adds at 1 ms a row plus 0.01 ms per position before it (attention). */
const added = (rows: number, start: number) => rows * 1 + 0.01 * rows * (start + (rows - 1) / 2)

describe('TickCost', () => {
  it('knows no chunk until a decode graph and a graph with a chunk beside it have run', () => {
    const cost = new TickCost()
    expect(cost.rowsWithin(1.5, 0, 64)).toBeUndefined()
    cost.mixed(8, 0, 30)
    expect(cost.rowsWithin(1.5, 0, 64)).toBeUndefined()
    cost.decodeOnly(20)
    expect(cost.rowsWithin(1.5, 0, 64)).toBeUndefined()
    cost.mixed(8, 0, 36)
    // 8 rows added 16 ms to a 20 ms graph: 2 ms a row, so 5 rows make 30 ms (1.5×), 10 make 40 (2×)
    expect(cost.rowsWithin(1.5, 0, 64)).toBe(5)
    expect(cost.rowsWithin(2, 0, 64)).toBe(10)
    expect(cost.rowsWithin(2, 0, 8)).toBe(8)
  })

  it('cuts smaller chunks further into a prompt, where each row attends to more of it', () => {
    const cost = new TickCost()
    cost.decodeOnly(20)
    // chunks at positions 0 to 1 600, as a prompt's run
    for (let start = 0; start < 1600; start += 8) cost.mixed(8, start, 20 + added(8, start))
    // within 10 ms: at position 0, 9 rows (9.36 ms); at 300, 2 (8.01 ms); at 1 000 a row is 11 ms: none fits
    expect(cost.rowsWithin(1.5, 0, 64)).toBe(9)
    expect(cost.rowsWithin(1.5, 300, 64)).toBe(2)
    expect(cost.rowsWithin(2, 1000, 64)).toBe(1)
    expect(cost.rowsWithin(1.5, 1000, 64)).toBe(0)
  })

  it('follows the machine as it slows: decode graphs and chunks measured since weigh most', () => {
    const cost = new TickCost()
    cost.decodeOnly(20)
    for (let i = 0; i < 50; i++) cost.mixed(8, 0, 36)
    expect(cost.rowsWithin(1.55, 0, 64)).toBe(5)
    for (let i = 0; i < 100; i++) cost.decodeOnly(40)
    for (let i = 0; i < 100; i++) cost.mixed(8, 0, 72)
    // 4 ms a row against a 40 ms graph: 0.55 × 40 / 4 = 5.5
    expect(cost.rowsWithin(1.55, 0, 64)).toBe(5)
  })

  it('ignores a graph that reports no time, no rows or no position', () => {
    const cost = new TickCost()
    cost.decodeOnly(Number.NaN)
    cost.decodeOnly(-1)
    expect(cost.rowsWithin(1.5, 0, 64)).toBeUndefined()
    cost.decodeOnly(20)
    cost.mixed(0, 0, 30)
    cost.mixed(8, 0, Number.POSITIVE_INFINITY)
    cost.mixed(8, Number.NaN, 30)
    expect(cost.rowsWithin(1.5, 0, 64)).toBeUndefined()
  })
})
