import type { HopLink } from '../../dataplane/hop-link'
import { iceConfig } from '../../dataplane/punched-channel'
import { PunchedHopLink } from '../../dataplane/punched-link'
import { PunchedPaths } from '../../dataplane/punched-paths'
import { trackerUrls } from '../../dataplane/tracker-connection'
import type { NodeIdentity } from '../../identity/keys'
import { manifestSha256 } from '../../identity/tickets'
import type { ShardRuntimeOptions } from '../../native'
import {
  artifactsForBlocks,
  type BlockRange,
  errorFrame,
  type HardwareProfile,
  IDLE_STATE,
  type Manifest,
  NeuronError,
  NO_SESSION,
  type RelayAssignment,
  type ServingState,
} from '../../protocol'
import { ArtifactStore } from '../artifacts/artifact-store'
import { type FetchProgress, overallProgress } from '../artifacts/fetch-progress'
import type { HostOptions } from '../host-options'
import { dialBackProver } from '../network/dial-back-answer'
import { PunchedPeers } from '../network/punched-peers'
import { Reachable, type ReachableChange, type ReachablePlan } from '../network/reachable'
import { HostRelaying } from '../network/relaying'
import type { StopSignal } from '../stop-signal'
import type { HeartbeatBody, TrackerSession } from '../tracker-session/tracker-session'
import { measureSpeed } from './measure-speed'
import type { ServingRuntime } from './serving-runtime'
import { ShardServer } from './shard-server'

/** How often a relayed host without a volunteer relay asks the tracker for one again, ms. */
const ASK_FOR_RELAY_MS = 5_000

/** What serving needs of its host: its options and keys, its tracker session, and the state it publishes. */
export interface ServingHost {
  readonly options: HostOptions
  readonly identity: NodeIdentity
  readonly profile: HardwareProfile
  /** stop(), as serving's steps see it: each gives up at its next step, a download at once. */
  readonly halt: StopSignal
  readonly tracker: TrackerSession
  /** The state published last; `set` changes what the next hello or update says, without publishing it. */
  state(): ServingState
  setState(state: ServingState): void
  /** Publishes a state: the host's listeners and its tracker hear it. */
  publish(state: ServingState): Promise<void>
  /** Loads the blocks to serve (Host.loadRuntime: a test harness may wrap what it returns). */
  loadRuntime(options: ShardRuntimeOptions): Promise<ServingRuntime>
  progress(p: FetchProgress): void
  log(line: string): void
}

/**
 * A host's serving: fetches and verifies a block range's artifacts, loads them, serves sessions on the data plane
 * (reachable directly or through a relay, and relaying for others when asked), measures its speed and offers it.
 */
export class HostServing {
  private store: ArtifactStore | undefined
  private runtime: ServingRuntime | undefined
  private server: ShardServer | undefined
  /** Where the swarm may reach the data plane: its addresses, a mapped port, the certificate clients pin. */
  private reachable: Reachable | undefined
  private plan: ReachablePlan | undefined
  /** The relay this host runs for others, and its own reservation at one while unreachable. */
  private relaying: HostRelaying | undefined
  private punched: PunchedPeers | undefined
  /** Channels this host punched to successors that take no connections (hop-to-hop seams between homes). */
  private punchedTo: PunchedPaths | undefined
  private askForRelay: NodeJS.Timeout | undefined

  constructor(private readonly host: ServingHost) {}

  /** Sessions open now (0 before it serves). */
  get activeSessions(): number {
    return this.server?.activeSessions ?? 0
  }

  /** Positions its blocks have run, over every session (0 before it serves). */
  get computedPositions(): { all: number; prompts: number } {
    return this.server?.computedPositions ?? { all: 0, prompts: 0 }
  }

  /** Whether a shard server was made (it may still be starting). */
  get started(): boolean {
    return this.server !== undefined
  }

  /** Its count of sessions, (`sessions`) those held since the last heartbeat, and its idle opens. */
  heartbeat(): HeartbeatBody {
    const server = this.server
    return {
      activeSessions: server?.activeSessions ?? 0,
      sessions: server?.sessionsSeen(),
      idleOpens: server?.idleOpens(Date.now()) ?? 0,
    }
  }

  /**
   * Fetches, verifies, loads and serves `blocks` of a model. Checks for stop() after every step and throws 'stopped'
   * then; what it made so far (runtime, server) is let go by close().
   */
  async serve(modelId: string, manifest: Manifest, torrent: Uint8Array, blocks: BlockRange): Promise<void> {
    const { options, halt, tracker } = this.host
    const files = artifactsForBlocks(manifest, blocks).map((a) => a.file)
    await this.host.publish({ ...IDLE_STATE, modelId, blocks, status: 'downloading' })
    halt.check()
    this.store ??= new ArtifactStore({
      dataDir: options.dataDir,
      ...(options.quotaBytes === undefined ? {} : { quotaBytes: options.quotaBytes }),
      ...(options.torrentPort === undefined ? {} : { torrentPort: options.torrentPort }),
      ...(options.torrentHost === undefined ? {} : { torrentHost: options.torrentHost }),
      portMapping: this.reachability().mapsPorts,
      // the tracker this host joined, as the host reaches it: the torrent may name it as its publisher did
      announceUrl: () => tracker.announceUrl(),
      log: (l) => this.host.log(l),
    })
    const progress = overallProgress(
      manifest,
      files,
      (fraction) => void this.host.publish({ ...this.host.state(), progress: fraction }),
    )
    const fetching = this.store.fetch(manifest, Buffer.from(torrent), files, (p) => {
      this.host.progress(p)
      progress(p)
    })
    const paths = await halt.unless(fetching)
    this.host.log(`fetched and verified ${files.join(', ')}`)
    await this.host.publish({ ...this.host.state(), status: 'loading', progress: 1 })
    halt.check()
    const embed = blocks[0] === 0
    const head = blocks[1] === manifest.nLayer
    // Without a detected GPU, don't probe the CUDA/Vulkan builds: they can't load, and ggml says so on stderr.
    const device = options.device !== 'cpu' && this.host.profile.gpus.length > 0 ? 'auto' : 'cpu'
    const runtime = await this.host.loadRuntime({
      artifacts: paths,
      blocks: [blocks[0], blocks[1]],
      embed,
      head,
      threads: options.threads,
      device,
    })
    this.runtime = runtime
    halt.check()
    const maxSessions = options.maxSessions ?? 4
    const kvCapacityTokens = options.maxSessionTokens ?? Math.min(4096, manifest.contextLength || 4096)
    this.server = this.shardServer(runtime, modelId, manifest, blocks, paths, { maxSessions, kvCapacityTokens })
    const reachable = options.relay ? undefined : await Reachable.listen(this.server, this.reachability())
    this.reachable = reachable
    this.relaying = this.startRelaying(this.server)
    halt.check()
    const msPerBlock = await measureSpeed(runtime, manifest, blocks, embed)
    halt.check()
    await this.host.publish({
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
      const state = this.host.state()
      if (state.status === 'ready' && state.endpoint === null && this.relaying?.unreserved === true)
        void this.host.publish(state).catch((e: Error) => this.host.log(`state update failed: ${e.message}`))
    }, ASK_FOR_RELAY_MS).unref()
    const endpoint = this.host.state().endpoint
    const where =
      endpoint === null ? 'through the relay: no address of this host answered the tracker' : `at ${endpoint}`
    this.host.log(`serving ${modelId} blocks [${blocks[0]}, ${blocks[1]}) ${where}, ${msPerBlock.toFixed(2)} ms/block`)
  }

  /** A frame the tracker relays from a client. */
  handleRelayed(frame: Uint8Array, from: string): Promise<Uint8Array> {
    return this.handleOwn(frame, `relay:${from}`)
  }

  /** A frame from `caller` (relayed, or on a punched channel) to the server serving now. */
  private async handleOwn(frame: Uint8Array, caller: string): Promise<Uint8Array> {
    if (this.server === undefined)
      return errorFrame(NO_SESSION, 0, { code: 'not_serving', message: 'this host serves no model yet' })
    return this.server.handle(frame, caller)
  }

  /** A client's offer of a channel punched through both routers, through the tracker (punched-peers.ts). */
  async acceptPunch(offer: string, from: string): Promise<string> {
    if (this.server === undefined) throw new NeuronError('not_serving', 'this host serves no model yet')
    this.punched ??= new PunchedPeers({
      ice: async () => {
        const stunPort = await this.host.tracker.stunPort()
        if (stunPort === null) throw new NeuronError('no_stun', 'this tracker runs no STUN server: nothing is punched')
        return iceConfig(this.host.tracker.url, stunPort)
      },
      // the server serving now (frames on a channel opened before a change of model reach the new one's checks)
      handle: (bytes, caller) => this.handleOwn(bytes, caller),
      log: (line) => this.host.log(line),
    })
    return this.punched.accept(offer, from)
  }

  /** How this host reaches the next hops it forwarded to lately: punched, or relayed (the client carries that seam). */
  seams(): { hostId: string; path: 'punched' | 'relayed' }[] {
    return this.punchedTo?.outcomes() ?? []
  }

  /**
   * A link to `hostId` over a channel this host punches to it (kept for later sessions), for a seam forwarded hop to
   * hop; undefined when none opens within PUNCH_WAIT_MS or NEURON_PUNCH=0 (relay tests and benches).
   */
  private async punchTo(hostId: string): Promise<HopLink | undefined> {
    if (process.env.NEURON_PUNCH === '0') return undefined
    this.punchedTo ??= new PunchedPaths(this.host.tracker, (line) => this.host.log(line))
    const path = await this.punchedTo.to(hostId)
    return path === undefined ? undefined : new PunchedHopLink(path)
  }

  /** The volunteer relay the tracker assigned (null: none). */
  assignRelay(relay: RelayAssignment | null): void {
    this.relaying?.assign(relay)
  }

  /** Routing plans with ms per block: once real traffic says the load-time figure is off by 20 %, tell the tracker. */
  reportMeasuredSpeed(): void {
    const measured = this.server?.msPerBlock
    const state = this.host.state()
    const reported = state.msPerBlock
    if (measured === undefined || reported === null || state.status !== 'ready') return
    if (Math.abs(measured - reported) / reported < 0.2) return
    void this.host
      .publish({ ...state, msPerBlock: measured })
      .catch((e: Error) => this.host.log(`state update failed: ${e.message}`))
  }

  /** Stops taking new sessions; resolves when the open ones have closed or `timeoutMs` passed. */
  async drain(timeoutMs: number): Promise<void> {
    await this.server?.drain(timeoutMs)
  }

  /** Lets go of everything serving made: the listener, the relays, the server, the runtime and the store. */
  async close(): Promise<void> {
    clearInterval(this.askForRelay)
    await this.reachable?.close()
    await this.relaying?.close()
    this.punched?.close()
    this.punchedTo?.close()
    await this.server?.close()
    this.runtime?.dispose()
    await this.store?.close()
  }

  private shardServer(
    runtime: ServingRuntime,
    modelId: string,
    manifest: Manifest,
    blocks: BlockRange,
    paths: string[],
    { maxSessions, kvCapacityTokens }: { maxSessions: number; kvCapacityTokens: number },
  ): ShardServer {
    const { identity, tracker, options } = this.host
    const head = blocks[1] === manifest.nLayer
    return new ShardServer(runtime, {
      modelId,
      blocks,
      embed: blocks[0] === 0,
      head,
      nEmbd: manifest.nEmbd,
      seams: manifest,
      maxSessions,
      log: (l) => this.host.log(l),
      signer: identity,
      tickets: {
        trackerKey: () => tracker.trackerKey,
        hostId: tracker.hostId,
        manifestSha256: manifestSha256(manifest),
      },
      limits: { maxSessionTokens: kvCapacityTokens },
      onReceipt: (r) => tracker.receipts.add(r),
      // the tracker hears at once that a session ended (it counts routed
      // sessions as open until a beat), at most one beat per 50 ms
      onSessionFreed: () => tracker.beatSoon(),
      ...(options.unsteppedSessionMs === undefined ? {} : { unsteppedSessionMs: options.unsteppedSessionMs }),
      ...(options.prefillChunkTokens === undefined ? {} : { prefillChunkTokens: options.prefillChunkTokens }),
      ...(options.idleSessionMs === undefined ? {} : { idleSessionMs: options.idleSessionMs }),
      dialBack: dialBackProver(identity),
      ...(head ? { vocabularyFrom: paths[0] } : {}),
      // hop to hop over punched channels: pushes to a client on one, and channels to successors behind routers
      push: (caller, bytes) => this.punched?.push(caller, bytes) === true,
      punchTo: (hostId) => this.punchTo(hostId),
    })
  }

  /**
   * Offers where this host may be reached again; a new address of its own also means a new tracker connection from it.
   */
  private offerAgain(reachable: Reachable, why: ReachableChange): void {
    if (this.host.state().status !== 'ready') return
    this.host.setState({ ...this.host.state(), ...reachable.offer() })
    // its tracker connection left from an address that is gone:
    // joining again (from the new one) says hello with the new offer
    if (why === 'addresses' && this.host.tracker.connected) this.host.tracker.reconnect()
    else
      void this.host.publish(this.host.state()).catch((e: Error) => this.host.log(`state update failed: ${e.message}`))
  }

  private startRelaying(server: ShardServer): HostRelaying {
    const { identity, options, tracker } = this.host
    return new HostRelaying({
      identity,
      server,
      forOthers: options.relay ? undefined : options.relayForOthers,
      trackerKey: () => tracker.trackerKey,
      submit: (receipts) => tracker.submit('relay.receipts', receipts),
      onOfferChange: () => {
        if (this.host.state().status === 'ready')
          void this.host
            .publish({ ...this.host.state(), ...this.relayOffer() })
            .catch((e: Error) => this.host.log(`state update failed: ${e.message}`))
      },
      log: (l) => this.host.log(l),
    })
  }

  private relayOffer(): Pick<ServingState, 'relayOffer'> {
    const offer = this.relaying?.offer()
    return offer === undefined ? {} : { relayOffer: offer }
  }

  /** How this host listens and offers itself, from its options and its tracker's address. */
  private reachability(): ReachablePlan {
    const { options, identity } = this.host
    this.plan ??= Reachable.plan({
      ...options,
      trackerUrl: trackerUrls(options.trackerUrl)[0] ?? '',
      identity,
      log: (l) => this.host.log(l),
    })
    return this.plan
  }
}
