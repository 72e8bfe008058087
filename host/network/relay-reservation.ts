import type WebSocket from 'ws'
import { dataPlaneSocket } from '../../dataplane/tls-trust'
import type { NodeIdentity } from '../../identity/keys'
import {
  decodeEnvelope,
  ENVELOPE_FRAME,
  encodeEnvelope,
  MAX_ENVELOPE_BYTES,
  RESERVATION_PATH,
  type RelayAssignment,
  ReservationAnswer,
  ReservationChallenge,
  reservationMessage,
} from '../../protocol'

/** Frames in flight from one relay at once: past it an envelope is dropped (the relay bounds its own side too). */
const MAX_IN_FLIGHT = 64
/** Reconnecting backs off from 1 s to this, ms. */
const MAX_BACKOFF_MS = 30_000
/** A relay's texts (nonce, verdict, errors) are short: longer ones are not parsed. */
const MAX_TEXT_BYTES = 4096

/**
 * Serves one frame that came through the relay, as the host's
 * ShardServer does (`caller` binds sessions to the circuit).
 */
export type CircuitHandler = (frame: Uint8Array, caller: string) => Promise<Uint8Array>

/**
 * A host's reservation at a volunteer relay: an outbound WebSocket (pinned to the relay's certificate) on which it
 * proves its key over the relay's nonce and then serves the frames of each circuit, as `circuit:<relayId>:<n>`.
 * Kept open, reconnecting with backoff, until the tracker names another relay or none (close()).
 */
export class RelayReservation {
  private socket: WebSocket | undefined
  private closed = false
  private backoffMs = 1_000
  private retry: NodeJS.Timeout | undefined
  private inFlight = 0
  /** True while the relay holds the reservation (its `ok` came). */
  reserved = false

  constructor(
    readonly relay: RelayAssignment,
    private readonly identity: NodeIdentity,
    private readonly handle: CircuitHandler,
    private readonly log: (line: string) => void = () => {},
  ) {
    this.connect()
  }

  close(): void {
    this.closed = true
    clearTimeout(this.retry)
    this.socket?.terminate()
  }

  private connect(): void {
    if (this.closed) return
    const url = new URL(RESERVATION_PATH, this.relay.endpoint).href
    const socket = dataPlaneSocket(url, { fingerprint: this.relay.fingerprint, maxPayload: MAX_ENVELOPE_BYTES })
    socket.binaryType = 'nodebuffer'
    this.socket = socket
    let proven = false
    socket.on('message', (data: Buffer, isBinary) => {
      if (isBinary) {
        if (this.reserved) void this.serve(socket, data)
        return
      }
      if (data.byteLength > MAX_TEXT_BYTES) return
      let text: unknown
      try {
        text = JSON.parse(data.toString('utf8'))
      } catch {
        return
      }
      if (!proven) {
        const challenge = ReservationChallenge.safeParse(text)
        if (!challenge.success) return
        proven = true
        const signature = this.identity.sign(reservationMessage(this.relay.hostId, challenge.data.nonce))
        socket.send(JSON.stringify({ publicKey: this.identity.publicKey, signature }))
        return
      }
      const answer = ReservationAnswer.safeParse(text)
      if (!answer.success) {
        this.log(`relay ${this.relay.hostId}: ${data.toString('utf8').slice(0, 200)}`)
        return
      }
      if (answer.data.ok) {
        this.reserved = true
        this.backoffMs = 1_000
        this.log(`reserved at relay ${this.relay.hostId} (${this.relay.endpoint})`)
      } else this.log(`relay ${this.relay.hostId} refused the reservation: ${answer.data.code}: ${answer.data.message}`)
    })
    socket.on('error', (e) => this.log(`relay ${this.relay.hostId}: ${e.message}`))
    socket.on('close', () => {
      this.reserved = false
      if (this.closed) return
      this.retry = setTimeout(() => this.connect(), this.backoffMs).unref()
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2)
    })
  }

  private async serve(socket: WebSocket, data: Buffer): Promise<void> {
    let envelope: ReturnType<typeof decodeEnvelope>
    try {
      envelope = decodeEnvelope(data)
    } catch (error) {
      this.log(`relay ${this.relay.hostId} sent a bad envelope: ${error instanceof Error ? error.message : error}`)
      return
    }
    if (envelope.kind !== ENVELOPE_FRAME || this.inFlight >= MAX_IN_FLIGHT) return
    this.inFlight++
    try {
      const answer = await this.handle(envelope.payload, `circuit:${this.relay.hostId}:${envelope.circuit}`)
      if (socket.readyState === socket.OPEN)
        socket.send(encodeEnvelope({ kind: ENVELOPE_FRAME, circuit: envelope.circuit, payload: answer }))
    } catch (error) {
      this.log(`a frame through relay ${this.relay.hostId} failed: ${error instanceof Error ? error.message : error}`)
    } finally {
      this.inFlight--
    }
  }
}
