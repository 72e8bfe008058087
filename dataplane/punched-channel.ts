// A data-plane channel punched through two routers (issue 39; protocol/punch.ts): a WebRTC data channel through werift
// (ICE with the tracker's STUN, DTLS, SCTP), carrying whole frames, each cut into messages of at most
// PUNCH_MESSAGE_BYTES behind a 4-byte big-endian length. bench/punch-transport.ts measured werift against today's TLS
// WebSocket: 0.2x the round trips and 0.07x the bytes per second on loopback, so it serves only where nothing direct
// answers; its 1.2 ms a round trip is small beside a home link's.
import { type RTCDataChannel, RTCPeerConnection, type RTCPeerConnectionConfig } from 'werift'
import { MAX_FRAME_BYTES, NeuronError, PUNCH_MESSAGE_BYTES } from '../protocol'

/** How long a punch may take before the client falls back to a relay, ms (ICE's checks, DTLS and SCTP's handshakes). */
export const PUNCH_TIMEOUT_MS = 6_000
/** Bytes queued on the channel past which `send` waits for it to drain to LOW_WATER. */
const HIGH_WATER = 1024 * 1024
const LOW_WATER = 256 * 1024
const PREFIX_BYTES = 4

/**
 * ICE's settings for peers of the tracker at `trackerUrl`, whose STUN server answers on UDP `stunPort` of the same
 * address (stun.port), IPv4. Always a STUN server of the swarm's own: werift asks a public one when given none. A
 * tracker on loopback (a computer's own swarm, tests) is reached at 127.0.0.1 only.
 */
export function iceConfig(trackerUrl: string, stunPort: number): Partial<RTCPeerConnectionConfig> {
  const { hostname } = new URL(trackerUrl)
  const stun = { iceServers: [{ urls: `stun:${hostname}:${stunPort}` }], iceUseIpv6: false }
  const loopback = hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]'
  if (!loopback) return stun
  return {
    ...stun,
    iceServers: [{ urls: `stun:127.0.0.1:${stunPort}` }],
    iceAdditionalHostAddresses: ['127.0.0.1'],
    iceFilterCandidatePair: (pair) =>
      pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
  }
}

/** What a closing side sends its peer, as text (frames are binary, so any text closes the channel). */
const CLOSING = 'closing'
/** How long the closing message has to leave before the peer connection closes, ms. */
const CLOSE_AFTER_MS = 100

/** Whole frames both ways over one data channel; the channel is closed on any breach of the framing. */
export class FrameChannel {
  private readonly listeners: ((frame: Uint8Array) => void)[] = []
  private readonly closers: (() => void)[] = []
  private pieces: Buffer[] = []
  private have = 0
  private wanted = -1
  private closed = false

  constructor(
    private readonly dc: RTCDataChannel,
    private readonly pc: RTCPeerConnection,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {
    dc.bufferedAmountLowThreshold = LOW_WATER
    dc.onMessage.subscribe((message) => {
      if (typeof message === 'string') this.close()
      else this.push(message)
    })
    dc.stateChanged.subscribe((state) => {
      if (state === 'closed' || state === 'closing') this.close()
    })
    pc.connectionStateChange.subscribe((state) => {
      if (state === 'failed' || state === 'closed' || state === 'disconnected') this.close()
    })
  }

  get isOpen(): boolean {
    return !this.closed
  }

  /** `listener` gets each whole frame, in order. */
  onFrame(listener: (frame: Uint8Array) => void): void {
    this.listeners.push(listener)
  }

  onClose(listener: () => void): void {
    if (this.closed) listener()
    else this.closers.push(listener)
  }

  /** Queues `frame`; waits while the channel holds more than HIGH_WATER bytes unsent. */
  async send(frame: Uint8Array): Promise<void> {
    if (this.closed) throw new NeuronError('hop_unreachable', 'the punched channel is closed')
    const bytes = Buffer.from(frame.buffer as ArrayBuffer, frame.byteOffset, frame.byteLength)
    const prefix = Buffer.alloc(PREFIX_BYTES)
    prefix.writeUInt32BE(bytes.byteLength, 0)
    const first = Math.min(bytes.byteLength, PUNCH_MESSAGE_BYTES - PREFIX_BYTES)
    const messages = [Buffer.concat([prefix, bytes.subarray(0, first)])]
    for (let at = first; at < bytes.byteLength; at += PUNCH_MESSAGE_BYTES)
      messages.push(bytes.subarray(at, at + PUNCH_MESSAGE_BYTES))
    for (const message of messages) {
      if (this.dc.bufferedAmount > HIGH_WATER) await this.dc.bufferedAmountLow.asPromise()
      if (this.closed) throw new NeuronError('hop_unreachable', 'the punched channel closed while sending')
      this.dc.send(message)
    }
  }

  /**
   * Closes the channel; the peer hears it from a text message (werift tells the far side nothing when a peer
   * connection closes, and frames never travel as text), then the peer connection closes.
   */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.pieces = []
    try {
      if (this.dc.readyState === 'open') this.dc.send(CLOSING)
    } catch {}
    setTimeout(() => void this.pc.close().catch(() => {}), CLOSE_AFTER_MS).unref()
    for (const listener of this.closers.splice(0)) listener()
  }

  /**
   * A message in: a frame's first message starts with its length, bounded before any of it is kept; the pieces are
   * kept as they come (memory grows with what the peer really sent, not with what it claims) and joined when whole.
   */
  private push(message: Buffer): void {
    if (this.closed) return
    let at = 0
    while (at < message.byteLength) {
      if (this.wanted < 0) {
        if (message.byteLength - at < PREFIX_BYTES) {
          this.close() // a length is never cut
          return
        }
        this.wanted = message.readUInt32BE(at)
        at += PREFIX_BYTES
        if (this.wanted > this.maxFrameBytes) {
          this.close()
          return
        }
      }
      const take = Math.min(this.wanted - this.have, message.byteLength - at)
      this.pieces.push(message.subarray(at, at + take))
      this.have += take
      at += take
      if (this.have === this.wanted) {
        const frame = Buffer.concat(this.pieces, this.have)
        this.pieces = []
        this.have = 0
        this.wanted = -1
        for (const listener of this.listeners) listener(frame)
      }
    }
  }
}

/**
 * The client's side: an offer out through `signal` (the tracker's punch.open), the host's answer in; resolves once the
 * channel is open, or fails with `punch_failed` after `timeoutMs` (routers that ICE cannot cross).
 */
export async function offerChannel(
  signal: (offer: string) => Promise<string>,
  config: Partial<RTCPeerConnectionConfig>,
  timeoutMs = PUNCH_TIMEOUT_MS,
): Promise<FrameChannel> {
  const pc = new RTCPeerConnection({ ...config, maxMessageSize: PUNCH_MESSAGE_BYTES })
  let timer: NodeJS.Timeout | undefined
  try {
    const dc = pc.createDataChannel('frames', { ordered: true })
    const opened = dc.stateChanged.watch((state) => state === 'open')
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new NeuronError('punch_failed', `no punched channel within ${timeoutMs} ms`)),
        timeoutMs,
      )
    })
    const punch = async () => {
      await pc.setLocalDescription(await pc.createOffer())
      await gathered(pc)
      const answer = await signal(pc.localDescription?.sdp ?? '')
      await pc.setRemoteDescription({ type: 'answer', sdp: answer })
      await opened
    }
    await Promise.race([punch(), late])
    return new FrameChannel(dc, pc)
  } catch (error) {
    await pc.close().catch(() => {})
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The host's side: answers `offer`; `onChannel` gets the channel once the client opens it (or never, when ICE fails:
 * the peer connection closes itself after `timeoutMs`).
 */
export async function answerChannel(
  offer: string,
  config: Partial<RTCPeerConnectionConfig>,
  onChannel: (channel: FrameChannel) => void,
  timeoutMs = PUNCH_TIMEOUT_MS,
): Promise<{ answer: string; close(): void }> {
  // a data channel's offer, with the certificate DTLS will pin: anything else is refused before werift sees it
  if (!/^m=application \d+ UDP\/DTLS\/SCTP webrtc-datachannel/m.test(offer) || !/^a=fingerprint:/m.test(offer))
    throw new NeuronError(
      'bad_offer',
      'an offer names one data channel (m=application … webrtc-datachannel) and a ' +
        'DTLS fingerprint; this one does not',
    )
  const pc = new RTCPeerConnection({ ...config, maxMessageSize: PUNCH_MESSAGE_BYTES })
  let opened = false
  const timer = setTimeout(() => {
    if (!opened) void pc.close().catch(() => {})
  }, timeoutMs)
  timer.unref()
  pc.onDataChannel.subscribe((dc) => {
    if (opened) return // one channel per peer connection
    opened = true
    clearTimeout(timer)
    const ready = () => onChannel(new FrameChannel(dc, pc))
    if (dc.readyState === 'open') ready()
    else void dc.stateChanged.watch((state) => state === 'open').then(ready, () => {})
  })
  try {
    const answering = (async () => {
      await pc.setRemoteDescription({ type: 'offer', sdp: offer })
      await pc.setLocalDescription(await pc.createAnswer())
      await gathered(pc)
    })()
    let late: NodeJS.Timeout | undefined
    await Promise.race([
      answering,
      new Promise<never>((_, reject) => {
        late = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      }),
    ]).finally(() => clearTimeout(late))
  } catch (error) {
    clearTimeout(timer)
    await pc.close().catch(() => {})
    throw new NeuronError('bad_offer', `cannot answer this offer: ${(error as Error).message}`)
  }
  return {
    answer: pc.localDescription?.sdp ?? '',
    close: () => {
      clearTimeout(timer)
      void pc.close().catch(() => {})
    },
  }
}

/** Vanilla ICE: the description goes out with every candidate, once gathering is complete. */
async function gathered(pc: RTCPeerConnection): Promise<void> {
  if (pc.iceGatheringState !== 'complete') await pc.iceGatheringStateChange.watch((state) => state === 'complete')
}
