import { REPLAY_STEP_BASE, type Receipt } from '../../protocol'
import type { Price } from './pricing'

/** The positions a session was routed for: `promptTokens` of its `maxTokens` are the prompt (step 1). */
export interface RoutedTokens {
  readonly maxTokens: number
  readonly promptTokens?: number | undefined
}

/** What a session's ticket fixed: the model, its price, the positions routed. */
export interface TicketTerms {
  readonly modelId: string
  readonly price: Price
  readonly routed: RoutedTokens | undefined
}

/**
 * The tokens the tracker counts for a step: step 1 carries the prompt the client declared (without a
 * declaration, the host's count, at most the tokens routed); every later step one token.
 */
export function countedTokens(routed: RoutedTokens | undefined, r: Pick<Receipt, 'step' | 'tokens'>): number {
  if (r.step !== 1) return 1
  return Math.max(1, Math.min(routed?.promptTokens ?? r.tokens, routed?.maxTokens ?? r.tokens))
}

/** A receipt pays only on the terms of its session's ticket: this tracker (when known), the model, its price, the positions routed. */
export function checkTerms(issued: TicketTerms, r: Receipt, trackerKey: string | undefined): { code: string; message: string } | undefined {
  if (trackerKey !== undefined && r.tracker !== trackerKey)
    return { code: 'route_mismatch', message: `receipt for step ${r.step} names another tracker (${r.tracker.slice(0, 8)}…)` }
  if (r.modelId !== issued.modelId) return { code: 'route_mismatch', message: `receipt for step ${r.step} names model ${r.modelId}, not ${issued.modelId}` }
  const p = issued.price
  if (r.price.promptMicroPerToken !== p.promptMicroPerToken || r.price.completionMicroPerToken !== p.completionMicroPerToken)
    return { code: 'route_mismatch', message: `receipt for step ${r.step} names another price than the ticket's` }
  const prompt = issued.routed?.promptTokens
  if (r.step >= REPLAY_STEP_BASE || prompt === undefined) return undefined
  const expected = r.step <= 1 ? 0 : prompt + r.step - 2
  if (r.position !== expected) return { code: 'position_mismatch', message: `step ${r.step} runs from position ${expected}, not ${r.position}` }
  if (expected + countedTokens(issued.routed, r) > (issued.routed?.maxTokens ?? Number.POSITIVE_INFINITY))
    return { code: 'position_mismatch', message: `step ${r.step} runs past the ${issued.routed?.maxTokens} tokens routed` }
  return undefined
}
