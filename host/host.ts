import { EventEmitter } from 'node:events'
import { join } from 'node:path'
import type { Socket } from 'socket.io-client'
import { connectAnyTracker, trackerBase, trackerUrls } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { manifestSha256 } from '../identity/tickets'
import { ShardRuntime, type ShardRuntimeOptions } from '../native'
import {
  artifactsForBlocks,
  type BlockRange,
  callRpc,
  errorFrame,
  type HardwareProfile,
  HostToTracker,
  IDLE_STATE,
  NeuronError,
  type RpcSocket,
  type ServingState,
  serveRpc,
  TrackerToHost,
} from '../protocol'
import { ArtifactStore } from './artifacts/artifact-store'
import { type FetchProgress, overallProgress } from './artifacts/fetch-progress'
import { hardwareProfile } from './hardware'
import type { HostOptions } from './host-options'
import { dialBackProver } from './network/dial-back-answer'
import { Reachable, type ReachableChange, type ReachablePlan } from './network/reachable'
import { HostRelaying } from './network/relaying'
import { placedRange } from './placement'
import { ReceiptOutbox } from './receipt-outbox'
import { measureSpeed } from './serving/measure-speed'
import type { ServingRuntime } from './serving/serving-runtime'
import { ShardServer } from './serving/shard-server'
import { StopSignal } from './stop-signal'

export type { HostOptions } from './host-options'

/** How often a relayed host without a volunteer relay asks the tracker for one again, ms. */
const ASK_FOR_RELAY_MS = 5_000

export interface HostEvents {
  state: [ServingState]
  progress: [FetchProgress]
}

/**
 * A volunteer host: joins a tracker, takes a block range (given or placed), fetches and verifies
 * only that range's artifacts over BitTorrent, loads them into the native runtime and serves
 * sessions until told to drain. A plain library: the CLI and the Electron app both drive it.
 */
export class Host extends EventEmitter<HostEvents> {
  state: ServingState = IDLE_STATE
  hostId = ''
  private socket: (Socket & RpcSocket) | undefined
  private store: ArtifactStore | undefined
  private runtime: ServingRuntime | undefined
  private server: ShardServer | undefined
  /** Where the swarm may reach the data plane: its addresses, a mapped port, the certificate clients pin. */
  private reachable: Reachable | undefined
  private plan: ReachablePlan | undefined
  /** The relay this host runs for others, and its own reservation at one while unreachable. */
  private relaying: HostRelaying | undefined
  private askForRelay: NodeJS.Timeout | undefined
  private heartbeat: NodeJS.Timeout | undefined
  /** Sends a heartbeat now (set once joined). */
  private beat: () => void = () => {}
  private beatSoon: NodeJS.Timeout | undefined
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  /** stop(), as the steps of a start in progress see it: each gives up at its next step, a download at once. */
  private readonly halt = new StopSignal(
    () =>
      `the host was stopped before it was ready to ` +
      `serve${this.options.modelId === undefined ? '' : ` ${this.options.modelId}`}`,
  )
  private identity: NodeIdentity | undefined
  /** The key that signs the tickets this host accepts, as the tracker said in its hello. */
  private trackerKey: string | undefined
  /** Which of the tracker URLs (instances of one swarm) it joined last. */
  private trackerIndex = 0
  /** Receipts this host signed, handed to the tracker by the host itself: a client that vanishes still pays. */
  private readonly outbox = new ReceiptOutbox(
    (receipts) => this.handIn('receipts.submit', receipts),
    (l) => this.log(l),
  )
  private profile: HardwareProfile | undefined

  constructor(readonly options: HostOptions) {
    super()
  }

  /** Sessions open on this host now (0 before it serves). */
  get activeSessions(): number {
    return this.server?.activeSessions ?? 0
  }

  private log(line: string): void {
    this.options.log?.(line)
  }

  /**
   * Connects and, when a model is named, fetches, loads and serves it; resolves once ready. A stop()
   * meanwhile makes it reject with code 'stopped' at its next step.
   */
  start(): Promise<void> {
    this.starting ??= this.startSteps()
    return this.starting
  }

  private async startSteps(): Promise<void> {
    const { options } = this
    this.halt.check()
    this.identity = await NodeIdentity.loadOrCreate(options.dataDir)
    const profile = await hardwareProfile(options.dataDir, { threads: options.threads })
    // The tracker places by what the host will use: no GPUs when told to stay on the CPU.
    this.profile = options.device === 'cpu' ? { ...profile, gpus: [] } : profile
    this.halt.check()
    await this.join()
    if (options.modelId !== undefined) await this.serve(options.modelId, options.blocks ?? 'auto')
  }

  /**
   * Opens an authenticated connection, says hello with the current state and starts heartbeats.
   * A lost tracker is joined again (fresh challenge, backing off to 30 s) while sessions carry on.
   */
  private async join(): Promise<void> {
    const identity = this.identity
    const profile = this.profile
    if (identity === undefined || profile === undefined) throw new NeuronError('not_started', 'start the host first')
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
    if (this.halt.stopped) {
      socket.close()
      throw this.halt.error()
    }
    this.socket = socket
    serveRpc(
      socket,
      TrackerToHost,
      { 'relay.frame': async ({ frame, from }) => ({ frame: await this.handleRelayed(frame, from) }) },
      undefined,
    )
    const hello = await callRpc(socket, HostToTracker, 'host.hello', { profile, state: this.state })
    // stop() closed the socket meanwhile: start no heartbeats.
    this.halt.check()
    this.hostId = hello.hostId
    this.trackerKey = hello.trackerKey
    // The key, for the operator of a private swarm to list (--allow-keys).
    this.log(`joined ${urls[index]} as ${hello.hostId} (public key ${identity.publicKey})`)
    clearInterval(this.heartbeat)
    this.beat = () =>
      callRpc(socket, HostToTracker, 'host.heartbeat', this.heartbeatBody(), hello.heartbeatMs).catch((e: Error) =>
        this.log(`heartbeat failed: ${e.message}`),
      )
    this.heartbeat = setInterval(() => {
      this.beat()
      this.reportMeasuredSpeed()
    }, hello.heartbeatMs)
    this.heartbeat.unref()
    socket.once('disconnect', (reason) => {
      clearInterval(this.heartbeat)
      if (this.halt.stopped) return
      this.log(`lost the tracker (${reason}); joining again`)
      void this.rejoin()
    })
  }

  /** Its count of sessions, and (host.heartbeat's `sessions`) those held since the last heartbeat. */
  private heartbeatBody() {
    return { activeSessions: this.server?.activeSessions ?? 0, sessions: this.server?.sessionsSeen() }
  }

  /** Routing plans with ms per block: once real traffic says the load-time figure is off by 20 %, tell the tracker. */
  private reportMeasuredSpeed(): void {
    const measured = this.server?.msPerBlock
    const reported = this.state.msPerBlock
    if (measured === undefined || reported === null || this.state.status !== 'ready') return
    if (Math.abs(measured - reported) / reported < 0.2) return
    void this.publishState({ ...this.state, msPerBlock: measured }).catch((e: Error) =>
      this.log(`state update failed: ${e.message}`),
    )
  }

  private async rejoin(): Promise<void> {
    for (let delayMs = 250; !this.halt.stopped; delayMs = Math.min(30_000, delayMs * 2)) {
      await new Promise((r) => setTimeout(r, delayMs))
      if (this.halt.stopped) return
      try {
        await this.join()
        return
      } catch (error) {
        this.log(
          `tracker still unreachable (${error instanceof Error ? error.message : error}); retrying in ` +
            `${Math.min(30_000, delayMs * 2)} ms`,
        )
      }
    }
  }

  /**
   * Fetches, verifies, loads and serves blocks of a model. Checks for stop() after every step and
   * throws 'stopped' then; what it made so far (runtime, server) is let go by stop().
   */
  async serve(modelId: string, range: BlockRange | 'auto'): Promise<void> {
    const socket = this.requireSocket()
    const { manifest, torrent } = await callRpc(socket, HostToTracker, 'model.get', { modelId })
    this.halt.check()
    const blocks = range === 'auto' ? await placedRange(socket, modelId, (l) => this.log(l)) : range
    this.halt.check()
    if (blocks[0] < 0 || blocks[1] > manifest.nLayer || blocks[0] >= blocks[1]) {
      throw new NeuronError(
        'bad_option',
        `--blocks ${blocks[0]}:${blocks[1]} is not a range of ${modelId}'s blocks [0, ${manifest.nLayer}).`,
      )
    }
    const files = artifactsForBlocks(manifest, blocks).map((a) => a.file)
    await this.publishState({ ...IDLE_STATE, modelId, blocks, status: 'downloading' })
    this.halt.check()
    this.store ??= new ArtifactStore({
      dataDir: this.options.dataDir,
      ...(this.options.quotaBytes === undefined ? {} : { quotaBytes: this.options.quotaBytes }),
      ...(this.options.torrentPort === undefined ? {} : { torrentPort: this.options.torrentPort }),
      ...(this.options.torrentHost === undefined ? {} : { torrentHost: this.options.torrentHost }),
      portMapping: this.reachability().mapsPorts,
      // the tracker this host joined, as the host reaches it: the torrent may name it as its publisher did
      announceUrl: () => `${trackerBase(trackerUrls(this.options.trackerUrl)[this.trackerIndex] ?? '')}/announce`,
      log: (l) => this.log(l),
    })
    const progress = overallProgress(
      manifest,
      files,
      (fraction) => void this.publishState({ ...this.state, progress: fraction }),
    )
    const fetching = this.store.fetch(manifest, Buffer.from(torrent), files, (p) => {
      this.emit('progress', p)
      progress(p)
    })
    const paths = await this.halt.unless(fetching)
    this.log(`fetched and verified ${files.join(', ')}`)
    await this.publishState({ ...this.state, status: 'loading', progress: 1 })
    this.halt.check()
    const embed = blocks[0] === 0
    const head = blocks[1] === manifest.nLayer
    // Without a detected GPU, don't probe the CUDA/Vulkan builds: they can't load, and ggml says so on stderr.
    const device = this.options.device !== 'cpu' && (this.profile?.gpus.length ?? 0) > 0 ? 'auto' : 'cpu'
    this.runtime = await this.loadRuntime({
      artifacts: paths,
      blocks: [blocks[0], blocks[1]],
      embed,
      head,
      threads: this.options.threads,
      device,
    })
    this.halt.check()
    const maxSessions = this.options.maxSessions ?? 4
    const kvCapacityTokens = this.options.maxSessionTokens ?? Math.min(4096, manifest.contextLength || 4096)
    this.server = new ShardServer(this.runtime, {
      modelId,
      blocks,
      embed,
      head,
      nEmbd: manifest.nEmbd,
      seams: manifest,
      maxSessions,
      log: (l) => this.log(l),
      ...(this.identity === undefined ? {} : { signer: this.identity }),
      tickets: { trackerKey: () => this.trackerKey, hostId: this.hostId, manifestSha256: manifestSha256(manifest) },
      limits: { maxSessionTokens: kvCapacityTokens },
      onReceipt: (r) => this.outbox.add(r),
      // the tracker hears at once that a session ended (it counts routed
      // sessions as open until a beat), at most one beat per 50 ms
      onSessionFreed: () => {
        if (this.halt.stopped) return
        this.beatSoon ??= setTimeout(() => {
          this.beatSoon = undefined
          this.beat()
        }, 50).unref()
      },
      ...(this.options.unsteppedSessionMs === undefined ? {} : { unsteppedSessionMs: this.options.unsteppedSessionMs }),
      ...(this.identity === undefined ? {} : { dialBack: dialBackProver(this.identity) }),
      ...(head ? { vocabularyFrom: paths[0] } : {}),
    })
    const reachable = this.options.relay ? undefined : await Reachable.listen(this.server, this.reachability())
    this.reachable = reachable
    this.relaying = this.startRelaying(this.server)
    this.halt.check()
    const msPerBlock = await (this.runtime === undefined ? 1 : measureSpeed(this.runtime, manifest, blocks, embed))
    this.halt.check()
    await this.publishState({
      modelId,
      blocks,
      status: 'ready',
      progress: 1,
      kvCapacityTokens,
      activeSessions: 0,
      maxSessions,
      msPerBlock,
      ...(reachable?.offer() ?? { endpoint: null }),
      ...this.relayOffer(),
    })
    // what changes while serving (a new address, a mapping made
    // or lost) is offered again, and the tracker dials it back
    reachable?.onChange((why) => this.offerAgain(reachable, why))
    // relayed without a volunteer relay: ask again now and then (one may have room now, or have joined since)
    this.askForRelay = setInterval(() => {
      if (this.state.status === 'ready' && this.state.endpoint === null && this.relaying?.unreserved === true)
        void this.publishState(this.state).catch((e: Error) => this.log(`state update failed: ${e.message}`))
    }, ASK_FOR_RELAY_MS).unref()
    const where =
      this.state.endpoint === null
        ? 'through the relay: no address of this host answered the tracker'
        : `at ${this.state.endpoint}`
    this.log(`serving ${modelId} blocks [${blocks[0]}, ${blocks[1]}) ${where}, ${msPerBlock.toFixed(2)} ms/block`)
  }

  /**
   * Offers where this host may be reached again; a new address of its own also means a new tracker connection from it.
   */
  private offerAgain(reachable: Reachable, why: ReachableChange): void {
    if (this.state.status !== 'ready') return
    this.state = { ...this.state, ...reachable.offer() }
    // its tracker connection left from an address that is gone:
    // joining again (from the new one) says hello with the new offer
    if (why === 'addresses' && this.socket?.connected) this.socket.disconnect()
    else void this.publishState(this.state).catch((e: Error) => this.log(`state update failed: ${e.message}`))
  }

  private startRelaying(server: ShardServer): HostRelaying | undefined {
    const identity = this.identity
    if (identity === undefined) return undefined
    return new HostRelaying({
      identity,
      server,
      forOthers: this.options.relay ? undefined : this.options.relayForOthers,
      trackerKey: () => this.trackerKey,
      submit: (receipts) => this.handIn('relay.receipts', receipts),
      onOfferChange: () => {
        if (this.state.status === 'ready')
          void this.publishState({ ...this.state, ...this.relayOffer() }).catch((e: Error) =>
            this.log(`state update failed: ${e.message}`),
          )
      },
      log: (l) => this.log(l),
    })
  }

  private relayOffer(): Pick<ServingState, 'relayOffer'> {
    const offer = this.relaying?.offer()
    return offer === undefined ? {} : { relayOffer: offer }
  }

  /** Receipts this host signed (as a host, or as a relay), handed to its tracker. */
  private async handIn(event: 'receipts.submit' | 'relay.receipts', receipts: unknown[]): Promise<void> {
    if (!this.socket?.connected) throw new NeuronError('tracker_unreachable', 'not connected to the tracker')
    await callRpc(this.socket, HostToTracker, event, { receipts })
  }

  /** How this host listens and offers itself, from its options and its tracker's address. */
  private reachability(): ReachablePlan {
    if (this.identity === undefined) throw new NeuronError('not_started', 'start the host first')
    this.plan ??= Reachable.plan({
      ...this.options,
      trackerUrl: trackerUrls(this.options.trackerUrl)[0] ?? '',
      identity: this.identity,
      log: (l) => this.log(l),
    })
    return this.plan
  }

  /**
   * Drains: tells the tracker, lets open sessions finish (up to `timeoutMs`), then leaves. A start in
   * progress gives up first (a download at once, a load once loaded), so nothing it made stays open.
   */
  stop(timeoutMs = 10_000): Promise<void> {
    this.stopping ??= this.shutdown(timeoutMs)
    return this.stopping
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    this.halt.request()
    await this.starting?.catch(() => {})
    if (this.server !== undefined && this.socket?.connected) {
      await this.publishState({ ...this.state, status: 'draining' }).catch(() => {})
      await this.server.drain(timeoutMs)
    }
    clearInterval(this.heartbeat)
    clearInterval(this.askForRelay)
    clearTimeout(this.beatSoon)
    await this.reachable?.close()
    await this.relaying?.close()
    await this.server?.close()
    // What was served is handed in before leaving (best effort: a tracker that is away misses it).
    await this.outbox.flush()
    this.outbox.close()
    this.runtime?.dispose()
    await this.store?.close()
    this.socket?.close()
  }

  private async handleRelayed(frame: Uint8Array, from: string): Promise<Uint8Array> {
    if (this.server === undefined)
      return errorFrame('0'.repeat(32), 0, { code: 'not_serving', message: 'this host serves no model yet' })
    return this.server.handle(frame, `relay:${from}`)
  }

  /** Loads the blocks this host serves (a test harness may wrap what it returns; the product never does). */
  protected async loadRuntime(options: ShardRuntimeOptions): Promise<ServingRuntime> {
    const runtime = await ShardRuntime.load(options)
    const { weightBytes, mappedBytes, hugePageBytes } = runtime.info()
    this.log(
      `loaded ${weightBytes} bytes of weights, ${mappedBytes} of them mapped from the artifact files ` +
        `(${hugePageBytes} in 2 MB pages)`,
    )
    return runtime
  }

  protected async publishState(state: ServingState): Promise<void> {
    this.state = state
    this.emit('state', state)
    if (!this.socket?.connected) return
    const { endpoint, relay } = await callRpc(this.socket, HostToTracker, 'host.state', state)
    if (relay !== undefined) this.relaying?.assign(relay)
    // the endpoint the tracker proved by dialing back (null: relayed), as the swarm will reach this host
    if (endpoint !== undefined && endpoint !== this.state.endpoint && this.state === state) {
      this.state = { ...state, endpoint }
      this.emit('state', this.state)
    }
  }

  private requireSocket(): Socket & RpcSocket {
    if (this.socket === undefined) throw new NeuronError('not_started', 'start the host before serving')
    return this.socket
  }
}

export function defaultDataDir(): string {
  return join(process.env.HOME ?? '.', '.neuron')
}
