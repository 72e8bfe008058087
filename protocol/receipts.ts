import { z } from 'zod'
import { NodeId, PublicKey } from './identity'
import { MAX_BLOCKS, MAX_SESSION_TOKENS } from './limits'
import { ModelId } from './manifest'

/** Steps at or above this number are failover replays: they rebuild a KV cache already paid for. */
export const REPLAY_STEP_BASE = 0x80000000

const Hex32 = z.string().regex(/^[0-9a-f]{32}$/, 'a session id is 32 hex digits')
const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 is 64 hex digits')
const Signature = z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url')

/**
 * What one hop proves it did for one step: it ran `blocks` over `tokens` positions of `session`,
 * taking the input whose sha256 is `input` and answering the output whose sha256 is `output`.
 * Signed with the host's ed25519 key; the tracker pays for blocks × tokens it can verify.
 */
export const ReceiptBody = z.object({
  session: Hex32,
  step: z.number().int().nonnegative().max(0xffffffff),
  hostId: NodeId,
  blocks: z.tuple([z.number().int().nonnegative().max(MAX_BLOCKS), z.number().int().positive().max(MAX_BLOCKS)]),
  tokens: z.number().int().positive().max(MAX_SESSION_TOKENS),
  /** The first position the step ran: the tracker checks it against the positions it routed. */
  position: z.number().int().nonnegative().max(0xffffffff),
  modelId: ModelId,
  /** The price on the session's ticket, micro-credits per token. */
  price: z.object({
    promptMicroPerToken: z.number().int().nonnegative(),
    completionMicroPerToken: z.number().int().nonnegative(),
  }),
  /** The key of the tracker whose ticket the session ran on: a receipt pays only there. */
  tracker: PublicKey,
  /** sha256 of the forward frame's payload. */
  input: Sha256,
  /** sha256 of the answer's payload (hidden states, or the sampled token's JSON). */
  output: Sha256,
  /**
   * The client's signature of the step (stepMessage), as the step carried it: a receipt proves a step the client sent,
   * so a host cannot bill one nobody sent. The tracker pays a session routed to a client key only with it.
   */
  client: Signature.optional(),
  /**
   * sha256 of the sketch of a hidden-state answer's rows (commitment.ts): what an audit by prefill compares each step
   * with. Absent on token and ok answers.
   */
  commit: Sha256.optional(),
})
export type ReceiptBody = z.infer<typeof ReceiptBody>

export const Receipt = ReceiptBody.extend({ signature: Signature })
export type Receipt = z.infer<typeof Receipt>

/** The exact bytes a host signs: every field, in a fixed order, so no JSON canonicalisation is needed. */
export function receiptMessage(r: ReceiptBody): string {
  const price = `${r.price.promptMicroPerToken} ${r.price.completionMicroPerToken}`
  const client = r.client === undefined ? '' : ` ${r.client}`
  const commit = r.commit === undefined ? '' : ` sketch:${r.commit}`
  return (
    `neuron-receipt/2 ${r.session} ${r.step} ${r.hostId} ${r.blocks[0]} ${r.blocks[1]} ${r.tokens} ` +
    `${r.position} ${r.modelId} ${price} ${r.tracker} ${r.input} ${r.output}${client}${commit}`
  )
}

/** What a client signs for each step it sends one hop: which session, hop, step, positions, and the bytes it sent. */
export interface StepTerms {
  readonly session: string
  readonly hostId: string
  readonly blocks: readonly [number, number]
  readonly step: number
  readonly position: number
  readonly tokens: number
  /** sha256 of the forward frame's payload. */
  readonly input: string
}

export function stepMessage(s: StepTerms): string {
  return (
    `neuron-step/1 ${s.session} ${s.hostId} ${s.blocks[0]} ${s.blocks[1]} ${s.step} ${s.position} ${s.tokens} ` +
    `${s.input}`
  )
}

/**
 * A forward frame's trailer: the client's signature of the step
 * (stepMessage), which the host checks and embeds in its receipt.
 */
export const StepTrailer = z.object({ client: Signature })
export type StepTrailer = z.infer<typeof StepTrailer>

/** Block-tokens a receipt proves: the unit hosts are paid in. */
export function blockTokens(r: Pick<ReceiptBody, 'blocks' | 'tokens'>): number {
  return (r.blocks[1] - r.blocks[0]) * r.tokens
}
