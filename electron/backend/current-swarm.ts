import type { SwarmClient } from '../../client/swarm-client'
import { type NodeIdentity, nodeIdOf } from '../../identity/keys'
import {
  ClientToTracker,
  callRpc,
  type Manifest,
  NeuronError,
  type RpcRequest,
  type RpcResponse,
  type TrackerLinkStatus,
} from '../../protocol'
import type { Tracker } from '../../tracker/server'
import { SwarmConnection } from './swarm-connection'
import { watchHeartbeat } from './tracker-heartbeat'

/** Tracker calls from the app give up sooner than the library's default: a person is waiting. */
export const RPC_TIMEOUT_MS = 10_000
const RECONNECT_MAX_MS = 30_000

export type TrackerSocket = SwarmClient['tracker']

export interface CurrentSwarmDeps {
  readonly dataDir: string
  /** GGUFs the embedded swarm publishes at start. */
  readonly defaultModels: readonly string[]
  /** The GGUFs the user added, as saved now: the swarm switched to publishes them too. */
  addedModels(): readonly string[]
  /** The embedded swarm's allow-list, as saved now, with the home-network switch at `lanOpen` (null: open). */
  allowedKeys(lanOpen: boolean): readonly string[] | null
  /** The embedded swarm is open to the home network, as saved now. */
  lanOpen(): boolean
  /** The embedded tracker's port as saved (null: none yet). */
  trackerPort(): number | null
  /** The embedded tracker listens on `port`: saved, so its address (and the API's) stays the same next time. */
  keepTrackerPort(port: number): Promise<void>
  /** Ends what ran on the swarm being left (chats, hosting); a switch goes on when it has. */
  leave(): Promise<void>
  /** Another connection or identity is in use: what was learnt of the previous one is stale. */
  switched(): void
  /** A client joined the tracker: at start, after a switch, and after a lost tracker came back. */
  joined(socket: TrackerSocket): void
  /** The tracker went away or came back (see status). */
  linkChanged(status: TrackerLinkStatus): void
  readonly log: (line: string) => void
}

/**
 * The swarm the app is on now: one SwarmConnection and the identity it joined with, switched whole
 * (another tracker or identity) so that a failure changes nothing, and joined again with backoff when
 * the tracker is lost. Keeps the swarm's model manifests until the next switch.
 */
export class CurrentSwarm {
  /** The last tracker connected to, for messages and settings while there is no connection. */
  private lastTrackerUrl: string
  /** Why there is no swarm connection, when the embedded swarm failed to start again after a failed switch. */
  private lost: string | null = null
  private readonly manifests = new Map<string, Promise<Manifest>>()
  private closing = false
  /** Why the tracker is unreachable now (null: it answers), and since when. */
  private link: { problem: string | null; since: number } = { problem: null, since: Date.now() }
  private stopHeartbeat: () => void = () => {}

  constructor(
    private readonly deps: CurrentSwarmDeps,
    /** null only while the embedded swarm is switched to another identity, or after it failed to start again. */
    private current: SwarmConnection | null,
    private identityInUse: NodeIdentity,
  ) {
    this.lastTrackerUrl = current?.trackerUrl ?? ''
  }

  /** The tracker connected to now. */
  get trackerUrl(): string {
    return this.current?.trackerUrl ?? this.lastTrackerUrl
  }

  /** The in-process tracker of the embedded default; null on a remote tracker. */
  get embedded(): Tracker | null {
    return this.current?.embedded ?? null
  }

  get identity(): NodeIdentity {
    return this.identityInUse
  }

  get hostId(): string {
    return nodeIdOf(this.identityInUse.publicKey)
  }

  /** Whether the tracker answers now: a dropped socket or an unanswered ping tells within seconds. */
  get status(): TrackerLinkStatus {
    const problem =
      this.current === null ? (this.lost ?? 'the app is switching its swarm connection') : this.link.problem
    return {
      trackerUrl: this.trackerUrl,
      state: problem === null ? 'connected' : 'unreachable',
      problem,
      since: this.link.since,
    }
  }

  /** Throws tracker_unreachable, saying why and since when, while the tracker does not answer. */
  checkReachable(): void {
    const { state, problem, since } = this.status
    if (state === 'connected') return
    // `since` is when the loss was noticed (a ping unanswered for 3 s, say), not when the tracker last answered.
    const seconds = Math.round((Date.now() - since) / 1000)
    const when = seconds < 5 ? 'just now' : seconds < 120 ? `${seconds} s ago` : `${Math.round(seconds / 60)} min ago`
    throw new NeuronError(
      'tracker_unreachable',
      `the tracker at ${this.trackerUrl} stopped answering ${when} (${problem}); the app keeps trying to reach ` +
        `it: send again once it is back, or pick another tracker in Settings`,
      { trackerUrl: this.trackerUrl },
    )
  }

  /** The swarm connection in use; throws (saying why) while there is none. */
  get connection(): SwarmConnection {
    if (this.current === null)
      throw new NeuronError(
        'tracker_unreachable',
        this.lost ?? 'the app is switching its swarm connection; try again in a moment',
      )
    return this.current
  }

  /** The app's account on the embedded tracker; undefined on a remote one (it tells only a balance, in its pushes). */
  async accountBalance(): Promise<Awaited<ReturnType<SwarmConnection['accountBalance']>>> {
    return await this.current?.accountBalance(this.identityInUse.publicKey)
  }

  /** Starts following the connection this swarm began with (see `joined`). */
  watch(): void {
    if (this.current === null) return
    this.keepPort(this.current)
    this.watchConnection(this.current)
  }

  async rpc<K extends keyof typeof ClientToTracker & string>(
    event: K,
    request: RpcRequest<typeof ClientToTracker, K>,
  ): Promise<RpcResponse<typeof ClientToTracker, K>> {
    const socket = this.connection.client.tracker
    this.checkReachable()
    if (!socket.connected) {
      throw new NeuronError(
        'tracker_unreachable',
        `not connected to the tracker at ${this.trackerUrl}; joining it again, try in a moment`,
      )
    }
    return callRpc(socket, ClientToTracker, event, request, RPC_TIMEOUT_MS)
  }

  manifest(modelId: string): Promise<Manifest> {
    let m = this.manifests.get(modelId)
    if (m === undefined) {
      m = this.rpc('model.get', { modelId }).then((r) => r.manifest)
      m.catch(() => this.manifests.delete(modelId))
      this.manifests.set(modelId, m)
    }
    return m
  }

  /**
   * Moves to another tracker or identity; hosting stops there. `save` records the change (settings,
   * identity) once the new swarm is joined and before the old one is left, so a failure up to then
   * changes nothing, and nothing fails after it. The embedded swarm shares its database with its
   * successor: see reopenEmbedded.
   */
  async switchTo(
    trackerUrl: string | null,
    identity: NodeIdentity,
    save: () => Promise<unknown>,
    lanOpen = this.deps.lanOpen(),
  ): Promise<void> {
    const old = this.current
    if (old?.embedded != null && trackerUrl === null) return this.reopenEmbedded(identity, save, lanOpen)
    const next = await this.openAndSave(trackerUrl, identity, save, lanOpen)
    // Saved: the switch goes through from here (a host that fails to stop is logged and let go).
    await this.deps.leave().catch((e: Error) => this.deps.log(`leaving the previous swarm: ${e.message}`))
    this.adopt(next, identity)
    await old?.close().catch((e: Error) => this.deps.log(`closing the previous swarm connection: ${e.message}`))
  }

  /** Stops following the tracker at once; closes the connection once `drain` has ended what runs on it. */
  async close(drain: () => Promise<void>): Promise<void> {
    this.closing = true
    this.stopHeartbeat()
    await drain()
    await this.current?.close()
  }

  /**
   * The embedded swarm with another identity: its tracker's database can have one owner, so the old
   * one is left first and joined again on failure. Should that fail too, the app has no swarm (calls
   * say why) rather than a closed one.
   */
  private async reopenEmbedded(identity: NodeIdentity, save: () => Promise<unknown>, lanOpen: boolean): Promise<void> {
    const old = this.current
    const oldIdentity = this.identityInUse
    await this.deps.leave()
    this.current = null
    this.deps.linkChanged(this.status)
    await old?.close().catch((e: Error) => this.deps.log(`closing the previous swarm connection: ${e.message}`))
    try {
      this.adopt(await this.openAndSave(null, identity, save, lanOpen), identity)
    } catch (error) {
      this.deps.log(`could not switch (${error instanceof Error ? error.message : error}); back to the previous swarm`)
      try {
        this.adopt(await this.open(null, oldIdentity), oldIdentity)
      } catch (again) {
        this.lost =
          `the embedded swarm did not start again (${again instanceof Error ? again.message : again}); ` +
          `restart the app`
        this.deps.log(this.lost)
        this.deps.linkChanged(this.status)
      }
      throw error
    }
  }

  /** Opens the next connection and records the change; a failed save closes it unused. */
  private async openAndSave(
    trackerUrl: string | null,
    identity: NodeIdentity,
    save: () => Promise<unknown>,
    lanOpen: boolean,
  ): Promise<SwarmConnection> {
    const next = await this.open(trackerUrl, identity, lanOpen)
    try {
      await save()
    } catch (error) {
      await next.close().catch((e: Error) => this.deps.log(`closing the unused connection: ${e.message}`))
      throw error
    }
    return next
  }

  /** `lanOpen`: the switch as it will be saved (a switch of it opens the embedded swarm before saving). */
  private open(
    trackerUrl: string | null,
    identity: NodeIdentity,
    lanOpen = this.deps.lanOpen(),
  ): Promise<SwarmConnection> {
    const { dataDir, defaultModels, log } = this.deps
    return SwarmConnection.open({
      dataDir,
      trackerUrl,
      identity,
      defaultModels,
      addedModels: this.deps.addedModels(),
      allowedKeys: this.deps.allowedKeys(lanOpen),
      trackerPort: this.deps.trackerPort(),
      lanOpen,
      log,
    })
  }

  private adopt(next: SwarmConnection, identity: NodeIdentity): void {
    this.current = next
    this.lastTrackerUrl = next.trackerUrl
    this.lost = null
    this.identityInUse = identity
    this.deps.switched()
    this.manifests.clear()
    this.keepPort(next)
    this.watchConnection(next)
  }

  private keepPort(connection: SwarmConnection): void {
    const port = connection.embedded?.port
    if (port === undefined || port === this.deps.trackerPort()) return
    this.deps
      .keepTrackerPort(port)
      .catch((e: Error) => this.deps.log(`could not save the embedded tracker's port ${port}: ${e.message}`))
  }

  /**
   * Tells `joined` of the connection's client and watches the tracker (its socket and a heartbeat):
   * once lost, the socket is closed (calls in flight fail at once) and joined again, backing off to 30 s.
   */
  private watchConnection(connection: SwarmConnection): void {
    const socket = connection.client.tracker
    this.deps.joined(socket)
    this.setLink(null)
    // Several instances (a comma-separated tracker list): the link moves between them by itself, and what
    // was joined on the old one (the earnings subscription) is asked for again on the new.
    socket.on('reconnected', () => {
      if (!this.closing && this.current === connection) this.deps.joined(socket)
    })
    this.stopHeartbeat()
    this.stopHeartbeat = watchHeartbeat(socket, (reason) => {
      if (this.closing || this.current !== connection || connection.client.tracker !== socket) return
      if (reason.includes('io client disconnect')) return
      this.setLink(reason)
      this.deps.log(`lost the tracker ${connection.trackerUrl} (${reason}); joining again`)
      socket.close()
      void this.rejoin(connection)
    })
  }

  private setLink(problem: string | null): void {
    if (problem !== this.link.problem) this.link = { problem, since: Date.now() }
    this.deps.linkChanged(this.status)
  }

  private async rejoin(connection: SwarmConnection): Promise<void> {
    for (
      let delayMs = 1000;
      !this.closing && this.current === connection;
      delayMs = Math.min(RECONNECT_MAX_MS, delayMs * 2)
    ) {
      await new Promise((r) => setTimeout(r, delayMs).unref())
      if (this.closing || this.current !== connection) return
      try {
        await connection.reconnectClient()
        if (this.closing || this.current !== connection) return
        this.watchConnection(connection)
        this.deps.log(`tracker ${connection.trackerUrl}`)
        return
      } catch (error) {
        this.deps.log(`tracker still unreachable (${error instanceof Error ? error.message : error})`)
      }
    }
  }
}
