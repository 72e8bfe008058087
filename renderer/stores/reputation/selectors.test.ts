import { describe, expect, it } from 'vitest'
import type { ReputationView } from '../../../protocol/app'
import { componentBars, historySeries, scoreGrade, scorePercent, successRate } from './selectors'

const view: ReputationView = {
  hostId: '0123456789abcdef0123',
  score: 0.874,
  components: { uptime: 0.99, completion: 0.95, latency: 0.6, audits: 1 },
  completedSteps: 190,
  failedSteps: 10,
  history: [
    { at: 20, score: 0.874 },
    { at: 10, score: 0.8 },
  ],
}

describe('reputation selectors', () => {
  it('shows the score as a percentage with a word for it', () => {
    expect(scorePercent(view.score)).toBe('87%')
    expect(scoreGrade(view.score)).toBe('Good')
  })

  it('lists the four components in a stable order, completion as the success rate', () => {
    expect(componentBars(view).map((b) => [b.key, b.value])).toEqual([
      ['uptime', 0.99],
      ['completion', 0.95],
      ['latency', 0.6],
      ['audits', 1],
    ])
    expect(successRate(view)).toBe('95.0% of 200 steps')
  })

  it('charts the history oldest first in percent', () => {
    expect(historySeries(view)).toEqual([
      { at: 10, score: 80 },
      { at: 20, score: 87.4 },
    ])
  })
})
