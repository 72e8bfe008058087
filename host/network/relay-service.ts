import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { type WebSocket, WebSocketServer } from 'ws'
import { nodeIdOf, verifySignature } from '../../identity/keys'
import {
  CIRCUIT_PATH,
  decodeEnvelope,
  decodeFrame,
  ENVELOPE_CLOSED,
  ENVELOPE_FRAME,
  EnvelopeError,
  encodeEnvelope,
  errorFrame,
  MAX_ENVELOPE_BYTES,
  MAX_FRAME_BYTES,
  MAX_RELAYED_HOSTS,
  NeuronError,
  RESERVATION_PATH,
  type RelayOffer,
  type RelayReceipt,
  type RelayReceiptBody,
  ReservationProof,
  relayReceiptMessage,
  reservationMessage,
} from '../../protocol'
import { ByteBucket } from './byte-bucket'
import {
  admitCircuit,
  answerRefused,
  circuitClientKey,
  OPEN_TIMEOUT_MS,
  rawBytes,
  refuseCircuit,
} from './circuit-admission'

const NO_SESSION = '0'.repeat(32)
/** Frames one circuit may have in flight, and one reservation over all its circuits. */
const MAX_IN_FLIGHT_PER_CIRCUIT = 8
const MAX_IN_FLIGHT_PER_RESERVATION = 64
/** A reservation must prove its key this soon after connecting, ms. */
const PROOF_TIMEOUT_MS = 5_000
/** The relay pings each reserved host this often and reports the round trip, ms. */
const PING_EVERY_MS = 2_000
/** A proof is a short JSON text: anything longer is refused before it is parsed. */
const MAX_PROOF_BYTES = 1024
/** Sessions whose frames are counted (for operators and tests); past it the oldest count is dropped. */
const MAX_COUNTED_SESSIONS = 10_000

export interface RelayServiceOptions {
  /** This relay's node id (named in every reservation proof and receipt). */
  readonly relayId: string
  /** Circuits at once, over all reserved hosts; reservations are bounded by the same number. */
  readonly circuits: number
  /** Bandwidth for relayed frames, megabits per second, over all circuits; one circuit may use half. */
  readonly mbit: number
  /** The tracker whose routes the relay is paid on (receipts name it); undefined: no receipts yet. */
  readonly trackerKey: () => string | undefined
  readonly sign: (message: string) => string
  readonly onReceipt: (receipt: RelayReceipt) => void
  /** The offer changed (a reservation came or went, circuits opened or closed, a round trip measured). */
  readonly onChange: () => void
  readonly log?: (line: string) => void
}

interface Reservation {
  readonly hostId: string
  readonly socket: WebSocket
  roundTripMs: number | null
  inFlight: number
  pingSentAt: number
  readonly pinger: NodeJS.Timeout
}

interface Circuit {
  readonly id: number
  readonly hostId: string
  /** The client key its session's ticket names: circuits per key are bounded (circuitShare). */
  readonly clientKey: string
  readonly socket: WebSocket
  readonly bucket: ByteBucket
  /** Requests carried to the host and not answered yet, by `session:step`, with their bytes. */
  readonly waiting: Map<string, number>
}

/**
 * A volunteer relay on a host's data-plane port (like libp2p's circuit relay v2): hosts no candidate of which the
 * tracker could reach keep a reservation here (RESERVATION_PATH, proving their key on a nonce), and clients open
 * circuits to them (CIRCUIT_PATH/<hostId>). Frames are piped in envelopes that name the circuit; the relay sees them
 * in the clear (only the legs to it are TLS). Bounded in reservations, circuits, frames in flight and bytes per second.
 */
export class RelayService {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_ENVELOPE_BYTES })
  private readonly reservations = new Map<string, Reservation>()
  private readonly circuits = new Map<number, Circuit>()
  private nextCircuit = 1
  /** Circuits connected whose first frame has not come yet (they hold no slot). */
  private opening = 0
  private readonly total: ByteBucket
  private readonly framesBySession = new Map<string, number>()

  constructor(private readonly options: RelayServiceOptions) {
    this.total = new ByteBucket((options.mbit * 1e6) / 8)
  }

  /** The offer for this host's state: its bounds, its load, the hosts reserved here and the round trip to each. */
  offer(): RelayOffer {
    return {
      circuits: this.options.circuits,
      mbit: this.options.mbit,
      openCircuits: Math.min(this.circuits.size, this.options.circuits),
      reserved: [...this.reservations.values()]
        .slice(0, MAX_RELAYED_HOSTS)
        .map((r) => ({ hostId: r.hostId, roundTripMs: r.roundTripMs })),
    }
  }

  /** Frames carried for `session`, both ways. */
  framesFor(session: string): number {
    return this.framesBySession.get(session) ?? 0
  }

  /** Takes a WebSocket upgrade on the relay's paths; false for any other path (the ShardServer's). */
  handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): boolean {
    const path = new URL(req.url ?? '/', 'http://relay').pathname
    if (path === RESERVATION_PATH) {
      this.wss.handleUpgrade(req, socket, head, (ws) => this.reserve(ws))
      return true
    }
    if (path.startsWith(`${CIRCUIT_PATH}/`)) {
      const hostId = path.slice(CIRCUIT_PATH.length + 1)
      this.wss.handleUpgrade(req, socket, head, (ws) => this.openCircuit(ws, hostId))
      return true
    }
    return false
  }

  close(): void {
    for (const r of this.reservations.values()) {
      clearInterval(r.pinger)
      r.socket.terminate()
    }
    for (const c of this.circuits.values()) c.socket.terminate()
    this.reservations.clear()
    this.circuits.clear()
    this.wss.close()
  }

  private reserve(socket: WebSocket): void {
    const nonce = randomBytes(24).toString('base64url')
    const refuse = (code: string, message: string) => {
      socket.send(JSON.stringify({ ok: false, code, message }))
      socket.close(1008, code)
    }
    socket.on('error', (e) => this.options.log?.(`relay reservation socket: ${e.message}`))
    const timer = setTimeout(
      () => refuse('proof_timeout', `prove your key within ${PROOF_TIMEOUT_MS} ms`),
      PROOF_TIMEOUT_MS,
    )
    socket.once('message', (data, isBinary) => {
      clearTimeout(timer)
      const bytes = rawBytes(data)
      if (isBinary || bytes.byteLength > MAX_PROOF_BYTES)
        return refuse('bad_proof', `a reservation proof is a JSON text of at most ${MAX_PROOF_BYTES} bytes`)
      let proof: ReservationProof
      try {
        proof = ReservationProof.parse(JSON.parse(bytes.toString('utf8')))
      } catch {
        return refuse('bad_proof', 'a reservation proof is {publicKey, signature}')
      }
      if (!verifySignature(proof.publicKey, reservationMessage(this.options.relayId, nonce), proof.signature))
        return refuse(
          'bad_proof',
          `the signature does not prove key ${proof.publicKey.slice(0, 8)}… over this relay's nonce`,
        )
      const hostId = nodeIdOf(proof.publicKey)
      const known = this.reservations.get(hostId)
      if (known === undefined && this.reservations.size >= this.options.circuits)
        return refuse(
          'relay_full',
          `this relay holds ${this.reservations.size} reservations, its bound; ask the tracker for another relay`,
        )
      if (known !== undefined) this.dropReservation(known, 'replaced by a new reservation')
      this.accept(hostId, socket)
    })
    socket.send(JSON.stringify({ nonce }))
  }

  private accept(hostId: string, socket: WebSocket): void {
    const reservation: Reservation = {
      hostId,
      socket,
      roundTripMs: null,
      inFlight: 0,
      pingSentAt: 0,
      pinger: setInterval(() => this.ping(reservation), PING_EVERY_MS).unref(),
    }
    this.reservations.set(hostId, reservation)
    socket.send(JSON.stringify({ ok: true }))
    socket.on('pong', () => {
      if (reservation.pingSentAt === 0) return
      reservation.roundTripMs = performance.now() - reservation.pingSentAt
      reservation.pingSentAt = 0
      this.options.onChange()
    })
    socket.on('message', (data, isBinary) => this.fromHost(reservation, rawBytes(data), isBinary))
    socket.on('close', () => {
      if (this.reservations.get(hostId) === reservation) this.dropReservation(reservation, 'its connection closed')
    })
    this.ping(reservation)
    this.options.log?.(`relay: host ${hostId} reserved here`)
    this.options.onChange()
  }

  private ping(r: Reservation): void {
    r.pingSentAt = performance.now()
    try {
      r.socket.ping()
    } catch {}
  }

  private dropReservation(r: Reservation, why: string): void {
    clearInterval(r.pinger)
    this.reservations.delete(r.hostId)
    r.socket.terminate()
    for (const c of this.circuits.values()) if (c.hostId === r.hostId) c.socket.close(1001, 'the host left the relay')
    this.options.log?.(`relay: host ${r.hostId}'s reservation ended (${why})`)
    this.options.onChange()
  }

  /**
   * An envelope from a reserved host: an answer for one circuit.
   * A malformed one gets a typed error; the relay carries on.
   */
  private fromHost(r: Reservation, bytes: Buffer, isBinary: boolean): void {
    let envelope: ReturnType<typeof decodeEnvelope>
    try {
      if (!isBinary) throw new EnvelopeError('bad_envelope', 'envelopes are binary messages')
      envelope = decodeEnvelope(bytes)
    } catch (error) {
      const code = error instanceof EnvelopeError ? error.code : 'bad_envelope'
      r.socket.send(
        JSON.stringify({ error: { code, message: error instanceof Error ? error.message : String(error) } }),
      )
      return
    }
    const circuit = this.circuits.get(envelope.circuit)
    if (envelope.kind !== ENVELOPE_FRAME || circuit === undefined || circuit.hostId !== r.hostId) return
    let key: string | undefined
    let header: { session: string; step: number } | undefined
    try {
      header = decodeFrame(envelope.payload)
      key = `${header.session}:${header.step}`
    } catch {}
    const requestBytes = key === undefined ? undefined : circuit.waiting.get(key)
    if (key === undefined || requestBytes === undefined) return
    circuit.waiting.delete(key)
    r.inFlight = Math.max(0, r.inFlight - 1)
    if (circuit.socket.readyState === circuit.socket.OPEN) circuit.socket.send(envelope.payload)
    if (header !== undefined)
      this.carried(header.session, header.step, r.hostId, requestBytes + envelope.payload.byteLength)
  }

  /** Counts the step's two frames for its session and signs the relay's receipt for them. */
  private carried(session: string, step: number, hostId: string, bytes: number): void {
    if (session === NO_SESSION) return
    const count = (this.framesBySession.get(session) ?? 0) + 2
    this.framesBySession.delete(session)
    this.framesBySession.set(session, count)
    if (this.framesBySession.size > MAX_COUNTED_SESSIONS)
      this.framesBySession.delete(this.framesBySession.keys().next().value as string)
    const tracker = this.options.trackerKey()
    if (tracker === undefined) return
    const body: RelayReceiptBody = {
      kind: 'relay',
      session,
      step,
      relayId: this.options.relayId,
      hostId,
      frames: 2,
      bytes,
      tracker,
    }
    this.options.onReceipt({ ...body, signature: this.options.sign(relayReceiptMessage(body)) })
  }

  /**
   * A circuit holds a slot only once its first frame, the open of a ticketed session on the host, proves its client
   * key (circuit-admission.ts): a socket that sends nothing else is closed after OPEN_TIMEOUT_MS and holds none, and
   * one key holds at most its share of the relay's circuits.
   */
  private openCircuit(socket: WebSocket, hostId: string): void {
    socket.on('error', (e) => this.options.log?.(`relay circuit socket: ${e.message}`))
    if (!this.reservations.has(hostId)) {
      refuseCircuit(
        socket,
        'not_reserved',
        `host ${hostId.slice(0, 40)} keeps no reservation at this relay; ask the tracker for a new route`,
      )
      return
    }
    if (this.opening >= 2 * this.options.circuits) {
      refuseCircuit(socket, 'relay_busy', `this relay has ${this.opening} circuits opening; try again in a moment`)
      return
    }
    this.opening++
    const timer = setTimeout(() => socket.close(1008, 'circuit_unticketed'), OPEN_TIMEOUT_MS)
    socket.once('close', () => clearTimeout(timer))
    socket.once('message', (data) => {
      clearTimeout(timer)
      this.opening--
      const bytes = rawBytes(data)
      try {
        this.ticketedCircuit(socket, hostId, circuitClientKey(bytes, hostId, this.options.trackerKey()), bytes)
      } catch (error) {
        const wire = error instanceof NeuronError ? error : new NeuronError('bad_frame', String(error))
        answerRefused(socket, bytes, wire.code, wire.message)
      }
    })
  }

  /** A circuit proven by its first frame: within the relay's bound and its key's share, it carries that frame on. */
  private ticketedCircuit(socket: WebSocket, hostId: string, clientKey: string, first: Buffer): void {
    admitCircuit(this.circuits.values(), this.options.circuits, clientKey)
    const id = this.nextCircuit
    this.nextCircuit = this.nextCircuit >= 0xffffffff ? 1 : this.nextCircuit + 1
    const perCircuit = new ByteBucket(this.total.bytesPerSecond / 2)
    const circuit: Circuit = { id, hostId, clientKey, socket, bucket: perCircuit, waiting: new Map() }
    this.circuits.set(id, circuit)
    this.options.onChange()
    socket.on('message', (data) => this.fromClient(circuit, rawBytes(data)))
    socket.on('close', () => {
      this.circuits.delete(id)
      const r = this.reservations.get(hostId)
      r?.socket.send(encodeEnvelope({ kind: ENVELOPE_CLOSED, circuit: id, payload: new Uint8Array() }))
      if (r !== undefined) r.inFlight = Math.max(0, r.inFlight - circuit.waiting.size)
      this.options.onChange()
    })
    this.fromClient(circuit, first)
  }

  /**
   * A frame from a client: carried to the host in an envelope,
   * unless a bound says no (then a typed error frame answers it).
   */
  private fromClient(circuit: Circuit, bytes: Buffer): void {
    let header: { session: string; step: number }
    try {
      header = decodeFrame(bytes)
    } catch (error) {
      circuit.socket.send(
        errorFrame(NO_SESSION, 0, {
          code: 'bad_frame',
          message: error instanceof Error ? error.message : String(error),
        }),
      )
      return
    }
    const answer = (code: string, message: string) =>
      circuit.socket.send(errorFrame(header.session, header.step, { code, message }))
    const reservation = this.reservations.get(circuit.hostId)
    if (reservation === undefined) {
      answer('not_reserved', `host ${circuit.hostId} left this relay; ask the tracker for a new route`)
      return
    }
    if (bytes.byteLength > MAX_FRAME_BYTES) {
      answer('frame_too_large', `a frame of ${bytes.byteLength} bytes exceeds ${MAX_FRAME_BYTES}`)
      return
    }
    if (circuit.waiting.size >= MAX_IN_FLIGHT_PER_CIRCUIT || reservation.inFlight >= MAX_IN_FLIGHT_PER_RESERVATION) {
      answer(
        'too_many_in_flight',
        `a circuit may have ${MAX_IN_FLIGHT_PER_CIRCUIT} frames in flight; wait for answers before sending more`,
      )
      return
    }
    if (!circuit.bucket.take(bytes.byteLength) || !this.total.take(bytes.byteLength)) {
      answer(
        'relay_rate_limited',
        `this relay carries ${this.options.mbit} Mbit/s (half of it per circuit); send again in a second`,
      )
      return
    }
    circuit.waiting.set(`${header.session}:${header.step}`, bytes.byteLength)
    reservation.inFlight++
    reservation.socket.send(encodeEnvelope({ kind: ENVELOPE_FRAME, circuit: circuit.id, payload: bytes }))
  }
}
