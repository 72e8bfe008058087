import { isDeepStrictEqual } from 'node:util'
import { NeuronError, type OpenSession, type Ticket } from '../../protocol'
import { type TicketTerms, verifyOpen } from './admission'
import type { FrameCaller, ServedSession } from './served-session'

/**
 * A conversation's next turn on a session open here (route.turn): the open comes again, from the caller that opened
 * it, with a turn ticket for the same client, blocks and positions, and the session, its cache kept, takes that ticket
 * from then on (its turn's first step may carry the turn's prompt). An open of an open session without one is refused
 * as before. Nothing is allocated: the session holds what its first open reserved.
 */
export function renewSession(
  session: string,
  served: ServedSession,
  caller: FrameCaller,
  request: OpenSession,
  terms: TicketTerms,
  /** Whether the runtime rolls a session's cache back: a turn may then start before the positions it holds end. */
  canRollBack: boolean,
): Ticket {
  const { ticket, signature } = request
  if (ticket?.turn === undefined || signature === undefined || served.probe)
    throw new NeuronError(
      'session_exists',
      `session ${session} is already open here; a conversation's next turn opens it again with the turn's ticket ` +
        `(route.turn), else use a fresh session id.`,
    )
  if (served.owner !== caller)
    throw new NeuronError(
      'not_your_session',
      `session ${session} was opened by another connection; a turn goes on over the connection that opened it.`,
    )
  verifyOpen(session, request, ticket, signature, terms)
  const before = served.open
  if (
    ticket.modelId !== terms.modelId ||
    ticket.manifestSha256 !== terms.manifestSha256 ||
    ticket.clientKey !== served.clientKey ||
    request.blocks[0] !== before.blocks[0] ||
    request.blocks[1] !== before.blocks[1] ||
    request.maxTokens !== before.maxTokens
  )
    throw new NeuronError(
      'turn_mismatch',
      `the turn's ticket is for another client, model, blocks or size than session ${session} was opened with; a ` +
        `turn goes on with the session's own terms.`,
    )
  const last = served.ticket.turn?.step ?? 1
  if (ticket.turn.step <= last)
    throw new NeuronError(
      'turn_out_of_order',
      `session ${session} is past step ${last}; a turn ticket for step ${ticket.turn.step} comes too late.`,
    )
  const next = served.order.next
  const back = ticket.turn.position < next
  if (ticket.turn.position > next || (back && !canRollBack))
    throw new NeuronError(
      'turn_out_of_order',
      back
        ? `session ${session} holds positions up to ${next}; a turn back at ${ticket.turn.position} needs a cache ` +
            "this model's family cannot roll back; start anew."
        : `session ${session} holds positions up to ${next}; a turn at ${ticket.turn.position} would leave a gap.`,
      { next },
    )
  return ticket
}

/**
 * The session's own open again, the same in every field, before its first step, from a connection made after the one
 * that opened it: the client's link went silent after its open got here (the answer lost on the way: a router that
 * dropped the connection one way), and the client opened afresh. The session moves to the new connection, which the
 * old one, dead to its client, loses; never back to an older one (its open, arriving late, is refused). Only the client
 * signs an open, over a connection pinned to this host's certificate, and it signs every step too.
 */
export function sameOpenAgain(served: ServedSession, request: OpenSession, caller: FrameCaller): boolean {
  return (
    !served.stepped && !served.probe && laterConnection(caller, served.owner) && isDeepStrictEqual(request, served.open)
  )
}

/** Whether `caller` is a connection of the same kind as `owner`'s, made after it (`ws:<n>`, `punch:<peer>:<n>`). */
function laterConnection(caller: FrameCaller, owner: FrameCaller): boolean {
  const [kind, n] = [caller.lastIndexOf(':'), owner.lastIndexOf(':')]
  if (caller.startsWith('relay:') || caller.slice(0, kind) !== owner.slice(0, n)) return false
  return Number(caller.slice(kind + 1)) > Number(owner.slice(n + 1))
}
