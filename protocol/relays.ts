// Volunteer relays (like libp2p's circuit relay v2): a host with a proven public endpoint carries frames for hosts
// no candidate of which answered. The unreachable host keeps a reservation open at the relay; clients open circuits.
import { z } from 'zod'
import { MAX_FRAME_BYTES } from './frames'
import { NodeId, PublicKey } from './identity'
import { MAX_NONCE_CHARS, MAX_ROUND_TRIP_MS, MAX_URL_CHARS } from './limits'
import { CertFingerprint } from './reachability'

/** Where a host keeps its reservation at a relay (a WebSocket on the relay's data-plane port). */
export const RESERVATION_PATH = '/relay/reserve'
/** Where a client opens a circuit to a reserved host: `${CIRCUIT_PATH}/<hostId>`. */
export const CIRCUIT_PATH = '/relay/circuit'
/** Circuits one relay may offer at most (all its reserved hosts together). */
export const MAX_RELAY_CIRCUITS = 1024
/** Hosts one relay lists as reserved in its state. */
export const MAX_RELAYED_HOSTS = 256
/** Envelope header: kind (1 byte), circuit id (4 bytes, big-endian). */
export const ENVELOPE_HEADER_BYTES = 5
/** An envelope carries one frame at most. */
export const MAX_ENVELOPE_BYTES = ENVELOPE_HEADER_BYTES + MAX_FRAME_BYTES

const Url = z.string().max(MAX_URL_CHARS).url()

/** What a volunteer relay offers, and its load: circuits at once (all reserved hosts together), and its bandwidth. */
export const RelayOffer = z.object({
  circuits: z.number().int().positive().max(MAX_RELAY_CIRCUITS),
  /** Bandwidth for relayed frames, megabits per second, over all circuits (one circuit may use half of it). */
  mbit: z.number().positive().max(100_000),
  /** Circuits open now. */
  openCircuits: z.number().int().nonnegative().max(MAX_RELAY_CIRCUITS),
  /** Hosts reserved here now, with the relay's measured WebSocket ping round trip to each, ms (null before one). */
  reserved: z
    .array(z.object({ hostId: NodeId, roundTripMs: z.number().min(0).max(MAX_ROUND_TRIP_MS).nullable() }))
    .max(MAX_RELAYED_HOSTS),
})
export type RelayOffer = z.infer<typeof RelayOffer>

/** The relay the tracker tells an unreachable host to reserve at (its proven endpoint and pinned certificate). */
export const RelayAssignment = z.object({ hostId: NodeId, endpoint: Url, fingerprint: CertFingerprint.optional() })
export type RelayAssignment = z.infer<typeof RelayAssignment>

/**
 * On a route: the hop's host is reached through this volunteer
 * relay at `endpoint` (the circuit URL), pinned to its certificate.
 */
export const RelayVia = z.object({ relayHostId: NodeId, endpoint: Url, fingerprint: CertFingerprint.optional() })
export type RelayVia = z.infer<typeof RelayVia>

/** The relay's first text message on a reservation: a nonce for the host to sign. */
export const ReservationChallenge = z.object({ nonce: z.string().min(16).max(MAX_NONCE_CHARS) })
/** The host's answer: its key and its signature of reservationMessage. */
export const ReservationProof = z.object({ publicKey: PublicKey, signature: z.string().max(MAX_NONCE_CHARS) })
export type ReservationProof = z.infer<typeof ReservationProof>
/** The relay's verdict: reserved, or why not (relay_full, bad_proof). */
export const ReservationAnswer = z.union([
  z.object({ ok: z.literal(true) }),
  z.object({ ok: z.literal(false), code: z.string().max(64), message: z.string().max(1024) }),
])

/** What a host signs to reserve at a relay: it names the relay, so no other relay can replay it. */
export function reservationMessage(relayHostId: string, nonce: string): string {
  return `neuron-relay-reservation\n${relayHostId}\n${nonce}`
}

/** Envelope kinds on a reservation: a frame for (or from) a circuit, or a circuit closed. */
export const ENVELOPE_FRAME = 1
export const ENVELOPE_CLOSED = 2

export interface Envelope {
  readonly kind: typeof ENVELOPE_FRAME | typeof ENVELOPE_CLOSED
  readonly circuit: number
  readonly payload: Uint8Array
}

export function encodeEnvelope(e: Envelope): Uint8Array {
  const out = new Uint8Array(ENVELOPE_HEADER_BYTES + e.payload.byteLength)
  out[0] = e.kind
  new DataView(out.buffer).setUint32(1, e.circuit)
  out.set(e.payload, ENVELOPE_HEADER_BYTES)
  return out
}

/** Parses an envelope, bounded: throws `bad_envelope` (or `frame_too_large`) rather than use what does not fit. */
export function decodeEnvelope(bytes: Uint8Array): Envelope {
  if (bytes.byteLength < ENVELOPE_HEADER_BYTES)
    throw new EnvelopeError(
      'bad_envelope',
      `an envelope has a ${ENVELOPE_HEADER_BYTES}-byte header; got ${bytes.byteLength} bytes`,
    )
  if (bytes.byteLength > MAX_ENVELOPE_BYTES)
    throw new EnvelopeError('frame_too_large', `an envelope of ${bytes.byteLength} bytes exceeds ${MAX_ENVELOPE_BYTES}`)
  const kind = bytes[0]
  if (kind !== ENVELOPE_FRAME && kind !== ENVELOPE_CLOSED)
    throw new EnvelopeError('bad_envelope', `unknown envelope kind ${kind}`)
  const circuit = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1)
  return { kind, circuit, payload: bytes.subarray(ENVELOPE_HEADER_BYTES) }
}

export class EnvelopeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * What a relay proves it carried for one step of one session: the request frame to `hostId` and its answer.
 * Signed with the relay's key; the tracker pays `frames` at the
 * relay price on the route, once per (session, relay, step).
 */
export const RelayReceiptBody = z.object({
  kind: z.literal('relay'),
  session: z.string().regex(/^[0-9a-f]{32}$/),
  step: z.number().int().nonnegative().max(0xffffffff),
  relayId: NodeId,
  hostId: NodeId,
  frames: z.number().int().positive().max(2),
  bytes: z
    .number()
    .int()
    .nonnegative()
    .max(2 * MAX_ENVELOPE_BYTES),
  tracker: PublicKey,
})
export type RelayReceiptBody = z.infer<typeof RelayReceiptBody>
export const RelayReceipt = RelayReceiptBody.extend({ signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/) })
export type RelayReceipt = z.infer<typeof RelayReceipt>

export function relayReceiptMessage(r: RelayReceiptBody): string {
  return `neuron-relay-receipt/1 ${r.session} ${r.step} ${r.relayId} ${r.hostId} ${r.frames} ${r.bytes} ${r.tracker}`
}

/** The relay fee per frame carried, micro-credits (a step is two frames: request and answer). */
export const DEFAULT_RELAY_MICRO_PER_FRAME = 2
