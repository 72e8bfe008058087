// What the tracker pays for a verify step (speculative decoding): each checked position at a completion token's
// price when the client signed the count, one token when it did not, never more positions than a verify step holds.
import { describe, expect, it } from 'vitest'
import type { Receipt } from '../../protocol'
import { checkTerms, stepCharge } from './receipt-terms'

const price = { promptMicroPerToken: 25, completionMicroPerToken: 100 }
const routed = { maxTokens: 69, promptTokens: 5 }
const signed = { modelId: 'm', price, routed, nLayer: 5, clientKey: 'k' }
const unsigned = { ...signed, clientKey: null }
const receipt = (step: number, position: number, tokens: number) =>
  ({ step, position, tokens, blocks: [0, 5], modelId: 'm', price, tracker: 't' }) as unknown as Receipt

describe('verify-step terms', () => {
  it(
    'charges every position a client-signed verify step checked, at a completion token’s price, and one token for ' +
      'an unsigned claim',
    () => {
      expect(stepCharge(signed, receipt(2, 5, 5))).toBe(500)
      expect(stepCharge(signed, receipt(3, 7, 1))).toBe(100)
      expect(stepCharge(unsigned, receipt(2, 5, 5))).toBe(100)
      // more than a verify step holds is paid as the most it may hold (the host refuses it anyway)
      expect(stepCharge(signed, receipt(2, 5, 40))).toBe(1700)
      // the prefill as before: the prompt and the first token
      expect(stepCharge(signed, receipt(1, 0, 5))).toBe(5 * 25 + 100)
    },
  )

  it(
    'takes a signed step anywhere a run of verify steps can reach, and nothing before its number allows or past ' +
      'the tokens routed',
    () => {
      expect(checkTerms(signed, receipt(2, 5, 5), undefined)).toBeUndefined()
      expect(checkTerms(signed, receipt(3, 8, 5), undefined)).toBeUndefined()
      expect(checkTerms(signed, receipt(3, 5, 1), undefined)?.code).toBe('position_mismatch')
      expect(checkTerms(signed, receipt(3, 5 + 18, 1), undefined)?.code).toBe('position_mismatch')
      expect(checkTerms(signed, receipt(10, 66, 5), undefined)?.code).toBe('position_mismatch')
      expect(checkTerms(unsigned, receipt(3, 7, 1), undefined)?.code).toBe('position_mismatch')
    },
  )
})
