import type { Socket } from 'socket.io-client'
import { connectAnyTracker, trackerBase, trackerUrls } from '../../dataplane/tracker-connection'
import type { NodeIdentity } from '../../identity/keys'
import {
  type BlockRange,
  callRpc,
  type HardwareProfile,
  HostToTracker,
  NeuronError,
  type RpcResponse,
  type RpcSocket,
  type ServingState,
  serveRpc,
  TrackerToHost,
} from '../../protocol'
import type { StopSignal } from '../stop-signal'
import { ReceiptOutbox } from './receipt-outbox'

export interface TrackerSessionOptions {
  /** The tracker; several instances of one swarm as a comma-separated list, joined in turn when one goes away. */
  readonly trackerUrl: string
  readonly identity: NodeIdentity
  readonly profile: HardwareProfile
  /** The host's stop(): no join, heartbeat or rejoin after it. */
  readonly halt: StopSignal
  /** The state the hello says. */
  readonly state: () => ServingState
  /** What each heartbeat says: the host's count of sessions, and those held since the last heartbeat. */
  readonly heartbeat: () => HeartbeatBody
  /** Called on every heartbeat, after it is sent. */
  readonly onHeartbeat: () => void
  /** A frame the tracker relays from a client to this host (for hosts that accept no connections). */
  readonly relayed: (frame: Uint8Array, from: string) => Promise<Uint8Array>
  /** A client's offer of a punched channel (host/network/punched-peers.ts), through the tracker: the answer. */
  readonly punched: (offer: string, from: string) => Promise<string>
  readonly log: (line: string) => void
}

export type HeartbeatBody = { activeSessions: number; sessions: string[] | undefined; idleOpens: number }

type StateAnswer = RpcResponse<typeof HostToTracker, 'host.state'>

/**
 * A host's session with its tracker: joins (an authenticated connection, hello, heartbeats), joins again when the
 * tracker is lost, answers what the tracker asks of the host (relayed frames), and carries what the host tells it
 * (its state, its receipts) and asks it (a model, a placement).
 */
export class TrackerSession {
  hostId = ''
  /** The key that signs the tickets this host accepts, as the tracker said in its hello. */
  trackerKey: string | undefined
  /** Receipts this host signed, handed to the tracker by the host itself: a client that vanishes still pays. */
  readonly receipts = new ReceiptOutbox(
    (receipts) => this.submit('receipts.submit', receipts),
    (l) => this.options.log(l),
  )
  private socket: (Socket & RpcSocket) | undefined
  /** Which of the tracker URLs (instances of one swarm) it joined last. */
  private trackerIndex = 0
  private readonly stunPorts = new WeakMap<object, Promise<number | null>>()
  private heartbeat: NodeJS.Timeout | undefined
  /** Sends a heartbeat now (set once joined). */
  private beat: () => void = () => {}
  /** The heartbeat beatSoon() asked for, until it is sent. */
  private pendingBeat: NodeJS.Timeout | undefined

  constructor(private readonly options: TrackerSessionOptions) {}

  get connected(): boolean {
    return this.socket?.connected === true
  }

  /** The UDP port of the tracker's STUN server (stun.port; null: none), asked once per connection. */
  stunPort(): Promise<number | null> {
    const socket = this.socket
    if (socket === undefined) return Promise.reject(new NeuronError('not_joined', 'this host has not joined a tracker'))
    let asked = this.stunPorts.get(socket)
    if (asked === undefined) {
      asked = callRpc(socket, HostToTracker, 'stun.port', {}).then((a) => a.port)
      asked.catch(() => this.stunPorts.delete(socket))
      this.stunPorts.set(socket, asked)
    }
    return asked
  }

  /**
   * This host's offer of a punched channel to `hostId` (a successor it forwards to hop to hop that takes no
   * connections), through the tracker; resolves with that host's answer (dataplane/punched-paths.ts signalling).
   */
  async offer(hostId: string, offer: string): Promise<string> {
    return (await callRpc(this.requireSocket(), HostToTracker, 'punch.open', { hostId, offer })).answer
  }

  /** The tracker instance this host joined (or tries first). */
  get url(): string {
    return trackerUrls(this.options.trackerUrl)[this.trackerIndex] ?? ''
  }

  /** The BitTorrent tracker of the instance this host joined, as the host reaches it. */
  announceUrl(): string {
    return `${trackerBase(this.url)}/announce`
  }

  /**
   * Opens an authenticated connection, says hello with the current state and starts heartbeats.
   * A lost tracker is joined again (fresh challenge, backing off to 30 s) while sessions carry on.
   */
  async join(): Promise<void> {
    const { identity, profile, halt, log } = this.options
    // Several instances of one swarm: the next after the one it was on (a lost one is likely down), and only one
    // signing with the key it knows.
    const urls = trackerUrls(this.options.trackerUrl)
    const known = this.trackerKey === undefined ? {} : { trackerKey: this.trackerKey }
    const { socket, index } = await connectAnyTracker(
      urls,
      '/hosts',
      identity,
      known,
      this.socket === undefined ? 0 : this.trackerIndex + 1,
    )
    this.trackerIndex = index
    if (halt.stopped) {
      socket.close()
      throw halt.error()
    }
    this.socket = socket
    serveRpc(
      socket,
      TrackerToHost,
      {
        'relay.frame': async ({ frame, from }) => ({ frame: await this.options.relayed(frame, from) }),
        'punch.offer': async ({ offer, from }) => ({ answer: await this.options.punched(offer, from) }),
      },
      undefined,
    )
    const hello = await callRpc(socket, HostToTracker, 'host.hello', { profile, state: this.options.state() })
    // stop() closed the socket meanwhile: start no heartbeats.
    halt.check()
    this.hostId = hello.hostId
    this.trackerKey = hello.trackerKey
    // The key, for the operator of a private swarm to list (--allow-keys).
    log(`joined ${urls[index]} as ${hello.hostId} (public key ${identity.publicKey})`)
    clearInterval(this.heartbeat)
    this.beat = () =>
      callRpc(socket, HostToTracker, 'host.heartbeat', this.options.heartbeat(), hello.heartbeatMs).catch((e: Error) =>
        log(`heartbeat failed: ${e.message}`),
      )
    this.heartbeat = setInterval(() => {
      this.beat()
      this.options.onHeartbeat()
    }, hello.heartbeatMs)
    this.heartbeat.unref()
    socket.once('disconnect', (reason) => {
      clearInterval(this.heartbeat)
      if (halt.stopped) return
      log(`lost the tracker (${reason}); joining again`)
      void this.rejoin()
    })
  }

  /** A heartbeat within 50 ms (one for any number of calls meanwhile): the tracker hears at once a session ended. */
  beatSoon(): void {
    if (this.options.halt.stopped) return
    this.pendingBeat ??= setTimeout(() => {
      this.pendingBeat = undefined
      this.beat()
    }, 50).unref()
  }

  /** Leaves the tracker to join it again: the new connection leaves from the host's current address. */
  reconnect(): void {
    if (this.socket?.connected) this.socket.disconnect()
  }

  /** The manifest and torrent of a model the tracker lists. */
  async model(modelId: string): Promise<RpcResponse<typeof HostToTracker, 'model.get'>> {
    return callRpc(this.requireSocket(), HostToTracker, 'model.get', { modelId })
  }

  /** The range the tracker proposes for this host (`--blocks auto`); throws its refusal when it proposes none. */
  async placedRange(modelId: string): Promise<BlockRange> {
    const placement = await callRpc(this.requireSocket(), HostToTracker, 'placement.request', { modelId })
    if (placement.proposal === null)
      throw new NeuronError(
        placement.refusal?.code ?? 'not_placed',
        `the tracker proposes no range of ${modelId} for this computer: ` +
          `${placement.refusal?.reason ?? 'no reason given'}`,
      )
    this.options.log(
      `placement: blocks [${placement.proposal.blocks[0]}, ${placement.proposal.blocks[1]}), ` +
        `${placement.proposal.bytesToDownload} bytes to fetch`,
    )
    return placement.proposal.blocks
  }

  /** Tells the tracker the host's state; it answers the endpoint it proved and a relay it assigns. */
  async sendState(state: ServingState): Promise<StateAnswer> {
    return callRpc(this.requireSocket(), HostToTracker, 'host.state', state)
  }

  /** Receipts this host signed (as a host, or as a relay), handed to its tracker. */
  async submit(event: 'receipts.submit' | 'relay.receipts', receipts: unknown[]): Promise<void> {
    if (!this.socket?.connected) throw new NeuronError('tracker_unreachable', 'not connected to the tracker')
    await callRpc(this.socket, HostToTracker, event, { receipts })
  }

  /** No heartbeat from now on. */
  stopHeartbeats(): void {
    clearInterval(this.heartbeat)
    clearTimeout(this.pendingBeat)
  }

  /** Hands in the receipts still queued (best effort: a tracker that is away misses them), then leaves. */
  async close(): Promise<void> {
    this.stopHeartbeats()
    await this.receipts.flush()
    this.receipts.close()
    this.socket?.close()
  }

  private async rejoin(): Promise<void> {
    const { halt, log } = this.options
    for (let delayMs = 250; !halt.stopped; delayMs = Math.min(30_000, delayMs * 2)) {
      await new Promise((r) => setTimeout(r, delayMs))
      if (halt.stopped) return
      try {
        await this.join()
        return
      } catch (error) {
        log(
          `tracker still unreachable (${error instanceof Error ? error.message : error}); retrying in ` +
            `${Math.min(30_000, delayMs * 2)} ms`,
        )
      }
    }
  }

  private requireSocket(): Socket & RpcSocket {
    if (this.socket === undefined) throw new NeuronError('not_started', 'start the host before serving')
    return this.socket
  }
}
