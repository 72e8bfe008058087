// The host's side of hole punching (issue 39; dataplane/punched-channel.ts): a client's offer comes through the
// tracker, which authenticated the client's key; the host answers it, and frames on the channel the client then opens
// are served as if they came over the host's own port, their sessions bound to that key. A public swarm's peers may
// offer to flood: peer connections are bounded in all and per key, a channel idle too long is closed, and frames in
// flight on one channel are bounded as on a WebSocket.
import type { RTCPeerConnectionConfig } from 'werift'
import { answerChannel, type FrameChannel, PUNCH_TIMEOUT_MS } from '../../dataplane/punched-channel'
import { decodeFrame, errorFrame, NeuronError, NO_SESSION } from '../../protocol'

/** Punched channels one host keeps at most (each a few UDP sockets and SCTP's state). */
export const MAX_PUNCHED_PEERS = 64
/** Of them, one client key's. */
export const MAX_PUNCHED_PER_KEY = 4
/** A channel that carried no frame this long is closed (the client punches again for its next session), ms. */
export const PUNCHED_IDLE_MS = 5 * 60_000
/** Frames one channel may have in flight (being served) at once. */
const MAX_IN_FLIGHT = 16

interface Peer {
  readonly from: string
  channel?: FrameChannel
  close(): void
}

export interface PunchedPeersOptions {
  /** ICE's settings (dataplane/punched-channel.ts iceConfig of the tracker the host is on, with its STUN port). */
  readonly ice: () => Promise<Partial<RTCPeerConnectionConfig>>
  /** Serves one frame from `caller` (ShardServer.handle): never throws. */
  readonly handle: (bytes: Uint8Array, caller: string) => Promise<Uint8Array>
  readonly log?: (line: string) => void
  readonly idleMs?: number
}

export class PunchedPeers {
  private readonly peers = new Set<Peer>()
  /** Open channels by caller (one per channel): the host pushes a session's frames unasked to its own (hop to hop). */
  private readonly callers = new Map<string, FrameChannel>()
  private opened = 0

  constructor(private readonly options: PunchedPeersOptions) {}

  get size(): number {
    return this.peers.size
  }

  /** Answers a client's offer; `from` is the key the tracker authenticated. */
  async accept(offer: string, from: string): Promise<string> {
    if (this.peers.size >= MAX_PUNCHED_PEERS)
      throw new NeuronError(
        'punch_busy',
        `this host keeps ${MAX_PUNCHED_PEERS} punched channels, its bound; use the relay the route names`,
      )
    let ofKey = 0
    for (const p of this.peers) if (p.from === from) ofKey++
    if (ofKey >= MAX_PUNCHED_PER_KEY)
      throw new NeuronError(
        'punch_share',
        `this client holds ${ofKey} punched channels to this host, its share; reuse one or use the relay`,
      )
    const peer: Peer = { from, close: () => {} }
    this.peers.add(peer)
    // never opened (ICE could not cross the routers): forgotten with its peer connection
    const unopened = setTimeout(() => {
      if (peer.channel === undefined) this.drop(peer)
    }, PUNCH_TIMEOUT_MS + 1_000)
    unopened.unref()
    try {
      const ice = await this.options.ice()
      const { answer, close } = await answerChannel(offer, ice, (channel) => this.serve(peer, channel))
      peer.close = close
      return answer
    } catch (error) {
      clearTimeout(unopened)
      this.drop(peer)
      throw error
    }
  }

  /** Sends `bytes` to `caller` unasked; false when it is no punched channel open here. */
  push(caller: string, bytes: Uint8Array): boolean {
    const channel = this.callers.get(caller)
    if (channel === undefined || !channel.isOpen) return false
    void channel.send(bytes).catch(() => {}) // closed meanwhile: its client fails over
    return true
  }

  close(): void {
    for (const peer of [...this.peers]) this.drop(peer)
  }

  private serve(peer: Peer, channel: FrameChannel): void {
    if (!this.peers.has(peer)) {
      channel.close()
      return
    }
    peer.channel = channel
    // each channel its own caller: a session is bound to the channel that opened it, as to a WebSocket connection
    const caller = `punch:${peer.from}:${++this.opened}`
    this.callers.set(caller, channel)
    let inFlight = 0
    const idleMs = this.options.idleMs ?? PUNCHED_IDLE_MS
    let idle = setTimeout(() => channel.close(), idleMs)
    idle.unref()
    channel.onClose(() => {
      clearTimeout(idle)
      this.callers.delete(caller)
      this.drop(peer)
    })
    channel.onFrame((bytes) => {
      clearTimeout(idle)
      idle = setTimeout(() => channel.close(), idleMs)
      idle.unref()
      if (inFlight >= MAX_IN_FLIGHT) {
        void channel.send(tooMany(bytes)).catch(() => {})
        return
      }
      inFlight++
      void this.options
        .handle(bytes, caller)
        .then((answer) => channel.send(answer))
        .catch(() => {}) // the channel closed meanwhile: its client fails over
        .finally(() => inFlight--)
    })
    this.options.log?.(`punched channel open to a peer (${this.peers.size} of ${MAX_PUNCHED_PEERS})`)
  }

  private drop(peer: Peer): void {
    if (!this.peers.delete(peer)) return
    // an open channel tells its peer before its peer connection closes; one never opened just closes
    if (peer.channel !== undefined) peer.channel.close()
    else peer.close()
  }
}

/** The typed refusal of a frame past a channel's bound, for the frame's own session and step where it has them. */
function tooMany(bytes: Uint8Array): Uint8Array {
  let to = { session: NO_SESSION, step: 0 }
  try {
    to = decodeFrame(bytes)
  } catch {}
  return errorFrame(to.session, to.step, {
    code: 'too_many_in_flight',
    message: `a punched channel may have ${MAX_IN_FLIGHT} frames in flight; wait for answers before sending more`,
  })
}
