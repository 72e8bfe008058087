import { z } from 'zod'
import { BlockRange } from './blocks'
import { NodeId, PublicKey } from './identity'
import { MAX_BLOCKS, MAX_SESSION_TOKENS } from './limits'
import { ModelId } from './manifest'

const SessionId = z.string().regex(/^[0-9a-f]{32}$/, 'a session id is 32 hex digits')
const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 is 64 hex digits')
const Signature = z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url')
const Micro = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)

/** A turn of a conversation on an open session: its first step, where it starts, the prompt tokens it carries. */
export const SessionTurn = z.object({
  step: z.number().int().min(2).max(0x7fffffff),
  position: z.number().int().min(1).max(MAX_SESSION_TOKENS),
  tokens: z.number().int().min(1).max(MAX_SESSION_TOKENS),
})
export type SessionTurn = z.infer<typeof SessionTurn>

/**
 * What the tracker grants one hop of one session: the client `clientKey` may run `blocks` of
 * `modelId` (the manifest whose sha256 is `manifestSha256`) on host `hostId` for up to `maxTokens`
 * positions at `price`, opening it before `expiresAt` (ms since epoch). Signed by `trackerKey`;
 * a host serves only sessions whose open carries one, signed by its own tracker.
 */
export const TicketBody = z.object({
  session: SessionId,
  clientKey: PublicKey,
  hostId: NodeId,
  blocks: BlockRange,
  maxTokens: z.number().int().positive().max(MAX_SESSION_TOKENS),
  /** Of them, the prompt the client declared: step 1 may carry no more (the tracker charges for this many). */
  promptTokens: z.number().int().nonnegative().max(MAX_SESSION_TOKENS),
  modelId: ModelId,
  manifestSha256: Sha256,
  price: z.object({ promptMicroPerToken: Micro, completionMicroPerToken: Micro }),
  expiresAt: z.number().int().nonnegative(),
  trackerKey: PublicKey,
  /**
   * The tracker's own probe: the host admits it in its reserved probe slots, past its session limit. Only
   * the tracker's signature sets it (it is signed with the rest), so no client can reach those slots.
   */
  probe: z.literal(true).optional(),
  /**
   * What holding this hop's session costs per minute started, micro-credits: the cache its maxTokens reserve on these
   * blocks, at the tracker's rent. The tracker charges it from the plan to session.end (tracker/ledger/rent.ts).
   */
  rentMicroPerMinute: Micro.optional(),
  /**
   * A failover ticket's terms (route.plan with `failedHost`): the host may take steps numbered from REPLAY_STEP_BASE
   * that rebuild positions [span[0], span[1]) of the cache, paid from `escrowOf`'s (the failed host's) earnings in the
   * session first, then by account `thenAccount`. A plain ticket, without it, refuses replay numbering.
   */
  replay: z
    .object({
      span: z.tuple([z.number().int().nonnegative(), z.number().int().positive().max(MAX_SESSION_TOKENS)]),
      escrowOf: NodeId,
      thenAccount: z.string().max(64),
    })
    .optional(),
  /**
   * The hops before this one on its route, in order, with their keys: a step forwarded into this hop (hop-to-hop)
   * proves itself by their signed receipts, so the tracker names whose signatures those must be. Absent on a one-hop
   * route, a route's first hop, and failover tickets (a failed-over route is client-relayed): no forwarded step is
   * taken then.
   */
  upstream: z
    .array(z.object({ hostId: NodeId, publicKey: PublicKey }))
    .min(1)
    .max(MAX_BLOCKS)
    .optional(),
  /**
   * A conversation's next turn (route.turn): the session, open on the host with its cache, goes on at step `step`,
   * position `position`, whose step may carry `tokens` new prompt tokens (priced as prompt, as step 1's are). A host
   * takes it as the open session's ticket from then on; absent, only step 1 carries a prompt.
   */
  turn: SessionTurn.optional(),
  /**
   * A session that starts from another's cache (route.plan with `fork`): the host opens it with the first `position`
   * positions of session `session`, which the same client key ran on this host with these blocks (open, or closed and
   * still in the host's prefix cache: host/serving/prefix-cache.ts), copied; its step 1 runs at `position`, carrying
   * the prompt after them (`promptTokens`). A host without that cache refuses the open (`prefix_gone`).
   */
  fork: z.object({ session: SessionId, position: z.number().int().min(1).max(MAX_SESSION_TOKENS) }).optional(),
})
export type TicketBody = z.infer<typeof TicketBody>

export const Ticket = TicketBody.extend({ signature: Signature })
export type Ticket = z.infer<typeof Ticket>

/** The exact bytes the tracker signs: every field, in a fixed order, so no JSON canonicalisation is needed. */
export function ticketMessage(t: TicketBody): string {
  return [
    'neuron-ticket/1',
    t.session,
    t.clientKey,
    t.hostId,
    t.blocks[0],
    t.blocks[1],
    t.maxTokens,
    t.promptTokens,
    t.modelId,
    t.manifestSha256,
    t.price.promptMicroPerToken,
    t.price.completionMicroPerToken,
    t.expiresAt,
    t.trackerKey,
    // last, and only on probes: every other ticket's bytes are as before
    ...(t.probe === true ? ['probe'] : []),
    ...(t.rentMicroPerMinute === undefined ? [] : ['rent', t.rentMicroPerMinute]),
    ...(t.replay === undefined
      ? []
      : ['replay', t.replay.span[0], t.replay.span[1], t.replay.escrowOf, t.replay.thenAccount]),
    ...(t.upstream === undefined ? [] : ['upstream', ...t.upstream.flatMap((h) => [h.hostId, h.publicKey])]),
    ...(t.turn === undefined ? [] : ['turn', t.turn.step, t.turn.position, t.turn.tokens]),
    ...(t.fork === undefined ? [] : ['fork', t.fork.session, t.fork.position]),
  ].join(' ')
}

/**
 * The exact bytes a client signs to open a ticketed session: the ticket (by its signature) and the
 * open's own terms. Only the ticket's client key can make it, so a ticket seen on the wire is useless
 * to anyone else.
 */
export function openMessage(
  ticketSignature: string,
  open: { blocks: readonly [number, number]; maxTokens: number },
): string {
  return `neuron-open/1 ${ticketSignature} ${open.blocks[0]} ${open.blocks[1]} ${open.maxTokens}`
}

/** How long after it is issued a ticket may still open its session (ms). */
export const TICKET_TTL_MS = 5 * 60_000
