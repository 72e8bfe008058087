// The batcher's fit of a graph's cost by its rows, from which a prompt's chunk is cut (step-batcher.ts).
import { describe, expect, it } from 'vitest'
import { TickCost } from './tick-cost'

describe('TickCost', () => {
  it('knows no per-row cost until graphs of two sizes have run', () => {
    const cost = new TickCost()
    expect(cost.rowsWithin(8, 1.5)).toBeUndefined()
    for (let i = 0; i < 10; i++) cost.add(8, 20)
    expect(cost.rowsWithin(8, 1.5)).toBeUndefined()
  })

  it('gives the rows that keep a graph within the factor of the others’ cost alone', () => {
    const cost = new TickCost()
    // 2 ms a graph plus 1 ms a row: 8 decode rows cost 10 ms, so 5 more rows make 15 ms (1.5×)
    for (let i = 0; i < 10; i++) {
      cost.add(8, 10)
      cost.add(72, 74)
    }
    expect(cost.rowsWithin(8, 1.5)).toBe(5)
    expect(cost.rowsWithin(16, 2)).toBe(18)
  })

  it('follows the machine as it slows: older graphs weigh less', () => {
    const cost = new TickCost()
    for (let i = 0; i < 20; i++) {
      cost.add(8, 10)
      cost.add(72, 74)
    }
    // now everything costs twice as much (another process took a core): the fit moves to 2 ms a row
    for (let i = 0; i < 60; i++) {
      cost.add(8, 20)
      cost.add(72, 148)
    }
    expect(cost.rowsWithin(8, 1.5)).toBe(5)
  })

  it('ignores a graph that reports no time or no rows', () => {
    const cost = new TickCost()
    cost.add(0, 5)
    cost.add(8, Number.NaN)
    cost.add(8, -1)
    cost.add(72, Number.POSITIVE_INFINITY)
    expect(cost.rowsWithin(8, 1.5)).toBeUndefined()
  })
})
