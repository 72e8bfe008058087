import { createHash } from 'node:crypto'
import { type Manifest, NeuronError, openMessage, type Ticket, type TicketBody, ticketMessage } from '../protocol'
import { type NodeIdentity, verifySignature } from './keys'

/** The tracker signs a ticket for one hop of one session. */
export function signTicket(tracker: NodeIdentity, body: Omit<TicketBody, 'trackerKey'>): Ticket {
  const full: TicketBody = { ...body, trackerKey: tracker.publicKey }
  return { ...full, signature: tracker.sign(ticketMessage(full)) }
}

/** The client signs its open of a ticketed session (only the ticket's client key can). */
export function signOpen(
  client: NodeIdentity,
  ticket: Pick<Ticket, 'signature'>,
  open: { blocks: readonly [number, number]; maxTokens: number },
): string {
  return client.sign(openMessage(ticket.signature, open))
}

/**
 * Checks a ticket a client presents to open a session on this host: signed by `trackerKey`, for
 * this session and host, not expired, and the open signed by the ticket's client. Throws a typed
 * NeuronError naming what is wrong.
 */
export function verifyTicket(
  ticket: Ticket,
  expect: {
    trackerKey: string
    session: string
    hostId: string
    openSignature: string
    blocks: readonly [number, number]
    maxTokens: number
  },
  now = Date.now(),
): void {
  const { signature, ...body } = ticket
  if (body.trackerKey !== expect.trackerKey || !verifySignature(expect.trackerKey, ticketMessage(body), signature)) {
    throw new NeuronError(
      'bad_ticket',
      "the ticket is not signed by this host's tracker; ask the tracker for a route (route.plan) and open with its " +
        'ticket.',
    )
  }
  if (body.session !== expect.session)
    throw new NeuronError(
      'bad_ticket',
      `the ticket is for session ${body.session}, not ${expect.session}; open each session with its own ticket.`,
    )
  if (body.hostId !== expect.hostId)
    throw new NeuronError(
      'wrong_host',
      `the ticket is for host ${body.hostId}, not this host (${expect.hostId}); open each hop with the ticket of ` +
        `its route hop.`,
    )
  if (now > body.expiresAt)
    throw new NeuronError(
      'ticket_expired',
      `the ticket expired ${Math.round((now - body.expiresAt) / 1000)} s ago; ask the tracker for a new route.`,
      {
        expiresAt: body.expiresAt,
      },
    )
  if (expect.blocks[0] !== body.blocks[0] || expect.blocks[1] !== body.blocks[1])
    throw new NeuronError(
      'ticket_mismatch',
      `the ticket covers blocks [${body.blocks[0]}, ${body.blocks[1]}); the open asks for [${expect.blocks[0]}, ` +
        `${expect.blocks[1]}). Open the blocks the route gave.`,
    )
  if (expect.maxTokens > body.maxTokens)
    throw new NeuronError(
      'ticket_mismatch',
      `the ticket covers ${body.maxTokens} tokens; the open asks for ${expect.maxTokens}. Ask the tracker for a ` +
        `larger route.`,
      {
        ticketMaxTokens: body.maxTokens,
      },
    )
  if (!verifySignature(body.clientKey, openMessage(signature, expect), expect.openSignature))
    throw new NeuronError(
      'bad_open_signature',
      "the open is not signed by the ticket's client key; only the client the ticket was issued to may open it.",
    )
}

/** The sha256 a receipt names for a frame's payload (its `input` and `output`), hex. */
export function payloadSha256(payload: Uint8Array): string {
  return createHash('sha256').update(payload).digest('hex')
}

/** sha256 of a manifest as both tracker and host hold it (parsed by the same schema, so the same JSON). */
export function manifestSha256(manifest: Manifest): string {
  return createHash('sha256').update(JSON.stringify(manifest)).digest('hex')
}
