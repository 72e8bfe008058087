import { MAX_DRAFT_TOKENS, REPLAY_STEP_BASE, type Receipt, type SessionTurn } from '../../protocol'
import { hopCharge, type Price } from './pricing'

/**
 * The positions a session was routed for: `promptTokens` of its `maxTokens` are the prompt (step 1), and each of a
 * conversation's later turns (route.turn) carries its own prompt tokens in its first step.
 */
export interface RoutedTokens {
  readonly maxTokens: number
  readonly promptTokens?: number | undefined
  /** A conversation's turns after the first, in order (route.turn). */
  readonly turns?: readonly SessionTurn[] | undefined
  /**
   * A session started from another's cache (route.plan's fork): step 1 runs at `position`, after the positions copied
   * from `session`, and `promptTokens` counts only the prompt after them.
   */
  readonly fork?: { readonly session: string; readonly position: number } | undefined
}

/** The turn whose first step is `step`, if one is. */
export function turnAt(routed: RoutedTokens | undefined, step: number): SessionTurn | undefined {
  return routed?.turns?.find((t) => t.step === step)
}

/**
 * Where the run of steps holding `step` starts: the latest turn at or before it, else step 1 at position 0 (a
 * fork's: at its position) with the declared prompt.
 */
function runOf(
  routed: RoutedTokens,
  step: number,
  prompt: number,
): SessionTurn | { step: 1; position: number; tokens: number } {
  let run: SessionTurn | { step: 1; position: number; tokens: number } = {
    step: 1,
    position: routed.fork?.position ?? 0,
    tokens: prompt,
  }
  for (const t of routed.turns ?? []) if (t.step <= step) run = t
  return run
}

/** What a session's ticket fixed: the model, its price, the positions routed. */
export interface TicketTerms {
  readonly modelId: string
  readonly price: Price
  readonly routed: RoutedTokens | undefined
  /**
   * The session's client key: its receipts carry the client's
   * signature of their token count (step-check.ts checks it first).
   */
  readonly clientKey?: string | null
}

/**
 * The tokens the tracker counts for a step: step 1 carries the prompt the client declared (without a
 * declaration, the host's count, at most the tokens routed); every later step one token, or, where the client
 * signed the count (`clientSigned`), each position of a verify step (speculative decoding: the last token and
 * up to MAX_DRAFT_TOKENS drafts), at the same price per position.
 */
export function countedTokens(
  routed: RoutedTokens | undefined,
  r: Pick<Receipt, 'step' | 'tokens'>,
  clientSigned = false,
): number {
  const turn = turnAt(routed, r.step)
  if (turn !== undefined) return Math.max(1, Math.min(turn.tokens, routed?.maxTokens ?? turn.tokens))
  if (r.step !== 1) return clientSigned ? Math.max(1, Math.min(r.tokens, MAX_DRAFT_TOKENS + 1)) : 1
  return Math.max(1, Math.min(routed?.promptTokens ?? r.tokens, routed?.maxTokens ?? r.tokens))
}

/**
 * What one hop's receipt costs by the tracker's count: the prefill as hopCharge prices it; a later step a completion
 * token's price per position counted (one, or each position of a client-signed verify step).
 */
export function stepCharge(
  issued: TicketTerms & { readonly nLayer: number },
  r: Pick<Receipt, 'step' | 'tokens' | 'blocks'>,
): number {
  const signed = issued.clientKey !== undefined && issued.clientKey !== null
  const tokens = countedTokens(issued.routed, r, signed)
  // a turn's first step carries its prompt as step 1 does, at the prompt's price
  if (r.step === 1 || turnAt(issued.routed, r.step) !== undefined)
    return hopCharge(issued.price, issued.nLayer, { step: 1, blocks: r.blocks, tokens })
  return tokens * hopCharge(issued.price, issued.nLayer, { step: r.step, blocks: r.blocks, tokens: 1 })
}

/**
 * A receipt pays only on the terms of its session's ticket: this
 * tracker (when known), the model, its price, the positions routed.
 */
export function checkTerms(
  issued: TicketTerms,
  r: Receipt,
  trackerKey: string | undefined,
): { code: string; message: string } | undefined {
  if (trackerKey !== undefined && r.tracker !== trackerKey)
    return {
      code: 'route_mismatch',
      message: `receipt for step ${r.step} names another tracker (${r.tracker.slice(0, 8)}…)`,
    }
  if (r.modelId !== issued.modelId)
    return {
      code: 'route_mismatch',
      message: `receipt for step ${r.step} names model ${r.modelId}, not ${issued.modelId}`,
    }
  const p = issued.price
  if (
    r.price.promptMicroPerToken !== p.promptMicroPerToken ||
    r.price.completionMicroPerToken !== p.completionMicroPerToken
  )
    return { code: 'route_mismatch', message: `receipt for step ${r.step} names another price than the ticket's` }
  const routed = issued.routed
  const prompt = routed?.promptTokens
  if (r.step >= REPLAY_STEP_BASE || routed === undefined || prompt === undefined) return undefined
  // positions run on from the step that started the run (step 1, or a turn's first step at its declared position)
  const run = runOf(routed, r.step, prompt)
  const after = run.position + run.tokens
  const expected = r.step <= run.step ? run.position : after + r.step - run.step - 1
  const signed = issued.clientKey !== undefined && issued.clientKey !== null
  // Verify steps advance one position or more each (the drafts that matched): a signed step lies in that range.
  const furthest = signed && r.step > run.step ? after + (r.step - run.step - 1) * (MAX_DRAFT_TOKENS + 1) : expected
  if (r.position < expected || r.position > furthest) {
    const range = furthest === expected ? `${expected}` : `${expected} to ${furthest}`
    return { code: 'position_mismatch', message: `step ${r.step} runs from position ${range}, not ${r.position}` }
  }
  if (r.position + countedTokens(issued.routed, r, signed) > (issued.routed?.maxTokens ?? Number.POSITIVE_INFINITY))
    return {
      code: 'position_mismatch',
      message: `step ${r.step} runs past the ${issued.routed?.maxTokens} tokens routed`,
    }
  return undefined
}
