// Who may open a circuit at a volunteer relay, and how many: a client with a ticket for the host it reaches (the open
// of its session, the first frame on the circuit), and a share of the relay's circuits per client key, as libp2p's
// circuit relay v2 bounds reservations and circuits per peer.
import type { RawData, WebSocket } from 'ws'
import { verifyTicket } from '../../identity/tickets'
import { decodeFrame, errorFrame, NeuronError, NO_SESSION, OpenSession, readJson } from '../../protocol'

/** A circuit must carry its session's ticketed open this soon after connecting, ms. */
export const OPEN_TIMEOUT_MS = 5_000

/** Circuits one client key may hold at a relay at once: a quarter of its circuits, one at least. */
export function circuitShare(circuits: number): number {
  return Math.max(1, Math.ceil(circuits / 4))
}

/**
 * Throws `relay_full` when the relay carries `bound` circuits, or `relay_share` when `clientKey` holds its share of
 * them (circuitShare): one client never takes every circuit.
 */
export function admitCircuit(open: Iterable<{ readonly clientKey: string }>, bound: number, clientKey: string): void {
  let total = 0
  let ofKey = 0
  for (const c of open) {
    total++
    if (c.clientKey === clientKey) ofKey++
  }
  if (total >= bound)
    throw new NeuronError(
      'relay_full',
      `this relay carries ${total} circuits, its bound; ask the tracker for a new route`,
    )
  if (ofKey >= circuitShare(bound))
    throw new NeuronError(
      'relay_share',
      `this client holds ${ofKey} of this relay's circuits, its share; close one or ask the tracker for a new route`,
    )
}

/**
 * The client key a circuit's first frame proves: the open of a session on `hostId`, with a ticket from the relay's
 * tracker, signed by the ticket's client. Throws a typed NeuronError naming what is missing.
 */
export function circuitClientKey(bytes: Uint8Array, hostId: string, trackerKey: string | undefined): string {
  const frame = decodeFrame(bytes)
  if (frame.kind !== 'open')
    throw new NeuronError(
      'circuit_unticketed',
      `a circuit starts with its session's ticketed open, not a ${frame.kind} frame; ask the tracker for a route.`,
    )
  const open = readJson(frame, OpenSession)
  if (open.ticket === undefined || open.signature === undefined)
    throw new NeuronError(
      'circuit_unticketed',
      "a circuit carries only ticketed sessions; open it with the route hop's ticket (route.plan).",
    )
  if (trackerKey === undefined)
    throw new NeuronError('no_tracker', "this relay has not yet learned its tracker's key; try again in a moment.")
  verifyTicket(open.ticket, {
    trackerKey,
    session: frame.session,
    hostId,
    openSignature: open.signature,
    blocks: open.blocks,
    maxTokens: open.maxTokens,
  })
  return open.ticket.clientKey
}

/** A refused circuit: every frame it sends is answered with the typed error, then it is closed. */
export function refuseCircuit(socket: WebSocket, code: string, message: string): void {
  socket.once('message', (data) => answerRefused(socket, rawBytes(data), code, message))
}

/** Answers `bytes` (a frame, or not) with the typed error, then closes the circuit. */
export function answerRefused(socket: WebSocket, bytes: Uint8Array, code: string, message: string): void {
  let to = { session: NO_SESSION, step: 0 }
  try {
    to = decodeFrame(bytes)
  } catch {}
  socket.send(errorFrame(to.session, to.step, { code, message }), () => socket.close(1013, code))
}

export function rawBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data
  if (Array.isArray(data)) return Buffer.concat(data)
  return Buffer.from(data)
}
