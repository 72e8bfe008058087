import { callRpc, NeuronError, type RpcSocket, TrackerToHost } from '../../protocol'
import { RelayQuota } from './relay-quota'

/**
 * Hosts the relay has carried bytes for, at most: past it the
 * oldest count is dropped (counts are for operators and tests).
 */
const MAX_COUNTED_HOSTS = 100_000
/** How long a host may take to answer an offer (ICE gathering, with its STUN round trip), ms. */
const PUNCH_ANSWER_MS = 10_000

/**
 * The tracker's relay, the last resort for a host no candidate of which answered the dial-back: frames from a client
 * to the host over the host's own Socket.IO connection, bounded per client key, and counted per host so that an
 * operator (and the network test) can see what went through it.
 */
export class TrackerRelay {
  private readonly quota = new RelayQuota()
  private readonly relayed = new Map<string, number>()
  /** Frames waiting on each host: failed at once when the host is found gone (its link cut), not at their timeout. */
  private readonly waiting = new Map<string, Set<(error: Error) => void>>()

  constructor(private readonly socketOf: (hostId: string) => RpcSocket | undefined) {}

  /**
   * Frame and answer, both ways counted. `from`: the key the
   * tracker authenticated, to which the host binds the session.
   */
  async forward(hostId: string, frame: Uint8Array, from: string): Promise<{ frame: Uint8Array }> {
    const socket = this.connected(hostId)
    const answer = await this.quota.run(from, frame.byteLength, () =>
      this.untilGone(hostId, callRpc(socket, TrackerToHost, 'relay.frame', { frame, from })),
    )
    this.count(hostId, frame.byteLength + answer.frame.byteLength)
    return answer
  }

  /**
   * A client's WebRTC offer to a host, and the host's answer (protocol/punch.ts): signalling for a channel punched
   * through both routers, after which this relay carries nothing for that pair. Bounded per client key as frames are.
   */
  async punch(hostId: string, offer: string, from: string): Promise<{ answer: string }> {
    const socket = this.connected(hostId)
    return this.quota.run(from, offer.length, () =>
      this.untilGone(hostId, callRpc(socket, TrackerToHost, 'punch.offer', { offer, from }, PUNCH_ANSWER_MS)),
    )
  }

  private connected(hostId: string): RpcSocket {
    const socket = this.socketOf(hostId)
    if (socket === undefined)
      throw new NeuronError(
        'host_unreachable',
        `host ${hostId} is not connected to the tracker; ask for a new route.`,
        { hostId },
      )
    return socket
  }

  /**
   * The host left or missed its heartbeats: what waits on it fails now, so its clients fail over instead of waiting.
   */
  hostGone(hostId: string, why: string): void {
    const error = new NeuronError('host_unreachable', `host ${hostId} went away (${why}); ask for a new route.`, {
      hostId,
    })
    for (const fail of this.waiting.get(hostId) ?? []) fail(error)
    this.waiting.delete(hostId)
  }

  private untilGone<T>(hostId: string, work: Promise<T>): Promise<T> {
    let fail: (error: Error) => void = () => {}
    const gone = new Promise<never>((_, reject) => {
      fail = reject
    })
    const waiting = this.waiting.get(hostId) ?? new Set()
    this.waiting.set(hostId, waiting.add(fail))
    return Promise.race([work, gone]).finally(() => {
      waiting.delete(fail)
      if (waiting.size === 0 && this.waiting.get(hostId) === waiting) this.waiting.delete(hostId)
    })
  }

  /** Data-plane bytes relayed to and from `hostId` since the tracker started. */
  bytesFor(hostId: string): number {
    return this.relayed.get(hostId) ?? 0
  }

  private count(hostId: string, bytes: number): void {
    const total = (this.relayed.get(hostId) ?? 0) + bytes
    this.relayed.delete(hostId)
    this.relayed.set(hostId, total)
    if (this.relayed.size > MAX_COUNTED_HOSTS) this.relayed.delete(this.relayed.keys().next().value as string)
  }
}
