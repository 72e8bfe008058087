import { verifySignature } from '../../identity/keys'
import { MAX_DRAFT_TOKENS, REPLAY_STEP_BASE, type Receipt, stepMessage } from '../../protocol'
import type { LedgerStore } from './ledger-store'
import { hopCharge, type Price } from './pricing'

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
  /**
   * The session's client key: its receipts carry the client's
   * signature of their token count (metering checks it first).
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
  if (r.step === 1) return hopCharge(issued.price, issued.nLayer, { step: 1, blocks: r.blocks, tokens })
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
  const prompt = issued.routed?.promptTokens
  if (r.step >= REPLAY_STEP_BASE || prompt === undefined) return undefined
  const expected = r.step <= 1 ? 0 : prompt + r.step - 2
  const signed = issued.clientKey !== undefined && issued.clientKey !== null
  // Verify steps advance one position or more each (the drafts that matched): a signed step lies in that range.
  const furthest = signed && r.step > 1 ? prompt + (r.step - 2) * (MAX_DRAFT_TOKENS + 1) : expected
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

/** Where the step's idempotency key comes from: one payment per session, step and span of blocks. */
export function receiptKey(r: Pick<Receipt, 'session' | 'step' | 'blocks'>): string {
  return `${r.session}:${r.step}:${r.blocks[0]}-${r.blocks[1]}`
}

/**
 * The step's hops before and after `r`, where settled, must hand over exactly what `r` signs it took
 * and gave; one message per seam that does not join.
 */
export async function seamBreaks(
  store: Pick<LedgerStore, 'receiptHashes'>,
  session: string,
  hops: readonly { readonly blocks: readonly [number, number] }[],
  r: Receipt,
): Promise<string[]> {
  const breaks: string[] = []
  for (const h of hops) {
    const before = h.blocks[1] === r.blocks[0]
    if (!before && h.blocks[0] !== r.blocks[1]) continue
    const other = await store.receiptHashes(receiptKey({ session, step: r.step, blocks: [h.blocks[0], h.blocks[1]] }))
    if (other === undefined || (before ? other.output === r.input : other.input === r.output)) continue
    const [a, b] = before ? [h.blocks, r.blocks] : [r.blocks, h.blocks]
    breaks.push(`step ${r.step}: blocks [${b[0]}, ${b[1]}) took other bytes than blocks [${a[0]}, ${a[1]}) answered`)
  }
  return breaks
}

/**
 * Whether the receipt embeds `clientKey`'s signature of the very
 * step it bills: its session, hop, step, positions and input.
 */
export function clientSignedStep(clientKey: string, r: Receipt): boolean {
  if (r.client === undefined) return false
  const terms = {
    session: r.session,
    hostId: r.hostId,
    blocks: r.blocks,
    step: r.step,
    position: r.position,
    tokens: r.tokens,
    input: r.input,
  }
  return verifySignature(clientKey, stepMessage(terms), r.client)
}
