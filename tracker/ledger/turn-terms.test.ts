// What the tracker pays for a conversation's later turns (route.turn): a turn's first step carries its prompt at the
// prompt's price, at the position the turn declared, and the steps after it run on from there.
import { describe, expect, it } from 'vitest'
import type { Receipt } from '../../protocol'
import { checkTerms, stepCharge } from './receipt-terms'

const price = { promptMicroPerToken: 25, completionMicroPerToken: 100 }
// turn 1: a prompt of 5 at step 1, then steps 2 to 4 (positions 5 to 7); turn 2 at step 5, position 8, 6 tokens
const routed = { maxTokens: 64, promptTokens: 5, turns: [{ step: 5, position: 8, tokens: 6 }] }
const issued = { modelId: 'm', price, routed, nLayer: 5, clientKey: 'k' }
const receipt = (step: number, position: number, tokens: number) =>
  ({ step, position, tokens, blocks: [0, 5], modelId: 'm', price, tracker: 't' }) as unknown as Receipt

describe('a conversation turn’s terms', () => {
  it('charges a turn’s first step as a prompt of the tokens the turn declared, and a decode step as one token', () => {
    expect(stepCharge(issued, receipt(5, 8, 6))).toBe(6 * 25 + 100)
    // a host claiming more tokens than the turn declared is paid the turn's
    expect(stepCharge(issued, receipt(5, 8, 40))).toBe(6 * 25 + 100)
    expect(stepCharge(issued, receipt(6, 14, 1))).toBe(100)
    expect(stepCharge(issued, receipt(4, 7, 1))).toBe(100)
  })

  it('takes a turn’s steps at the positions it runs from, and none elsewhere', () => {
    expect(checkTerms(issued, receipt(4, 7, 1), undefined)).toBeUndefined()
    expect(checkTerms(issued, receipt(5, 8, 6), undefined)).toBeUndefined()
    expect(checkTerms(issued, receipt(6, 14, 1), undefined)).toBeUndefined()
    expect(checkTerms(issued, receipt(7, 15, 1), undefined)).toBeUndefined()
    // as if the turn carried one token: the position it would have had without the turn
    expect(checkTerms(issued, receipt(6, 9, 1), undefined)?.code).toBe('position_mismatch')
    expect(checkTerms(issued, receipt(5, 9, 6), undefined)?.code).toBe('position_mismatch')
    // past the positions the session was routed for
    expect(checkTerms(issued, receipt(56, 64, 1), undefined)?.code).toBe('position_mismatch')
  })
})
