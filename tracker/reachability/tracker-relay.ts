import { callRpc, NeuronError, type RpcSocket, TrackerToHost } from '../../protocol'
import { RelayQuota } from './relay-quota'

/** Hosts the relay has carried bytes for, at most: past it the oldest count is dropped (counts are for operators and tests). */
const MAX_COUNTED_HOSTS = 100_000

/**
 * The tracker's relay, the last resort for a host no candidate of which answered the dial-back: frames from a client
 * to the host over the host's own Socket.IO connection, bounded per client key, and counted per host so that an
 * operator (and the network test) can see what went through it.
 */
export class TrackerRelay {
  private readonly quota = new RelayQuota()
  private readonly relayed = new Map<string, number>()

  constructor(private readonly socketOf: (hostId: string) => RpcSocket | undefined) {}

  /** Frame and answer, both ways counted. `from`: the key the tracker authenticated, to which the host binds the session. */
  async forward(hostId: string, frame: Uint8Array, from: string): Promise<{ frame: Uint8Array }> {
    const socket = this.socketOf(hostId)
    if (socket === undefined) throw new NeuronError('host_unreachable', `host ${hostId} is not connected to the tracker; ask for a new route.`, { hostId })
    const answer = await this.quota.run(from, frame.byteLength, () => callRpc(socket, TrackerToHost, 'relay.frame', { frame, from }))
    this.count(hostId, frame.byteLength + answer.frame.byteLength)
    return answer
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
