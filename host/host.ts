import { EventEmitter } from 'node:events'
import { join } from 'node:path'
import { NodeIdentity } from '../identity/keys'
import { ShardRuntime, type ShardRuntimeOptions } from '../native'
import { type BlockRange, IDLE_STATE, NeuronError, type ServingState } from '../protocol'
import type { FetchProgress } from './artifacts/fetch-progress'
import { hardwareProfile } from './hardware'
import type { HostOptions } from './host-options'
import { HostServing } from './serving/host-serving'
import type { ServingRuntime } from './serving/serving-runtime'
import { StopSignal } from './stop-signal'
import { TrackerSession } from './tracker-session/tracker-session'

export type { HostOptions } from './host-options'

export interface HostEvents {
  state: [ServingState]
  progress: [FetchProgress]
}

/**
 * A volunteer host: joins a tracker, takes a block range (given or placed), fetches and verifies
 * only that range's artifacts over BitTorrent, loads them into the native runtime and serves
 * sessions until told to drain. A plain library: the CLI and the Electron app both drive it.
 * It starts and stops its two parts: the tracker session (join, heartbeats, state) and serving.
 */
export class Host extends EventEmitter<HostEvents> {
  state: ServingState = IDLE_STATE
  /** Its session with the tracker (tracker-session/), once started. */
  private tracker: TrackerSession | undefined
  /** Its serving: artifacts, runtime, shard server, reachability and relays (serving/host-serving.ts). */
  private serving: HostServing | undefined
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  /** stop(), as the steps of a start in progress see it: each gives up at its next step, a download at once. */
  private readonly halt = new StopSignal(
    () =>
      `the host was stopped before it was ready to ` +
      `serve${this.options.modelId === undefined ? '' : ` ${this.options.modelId}`}`,
  )

  constructor(readonly options: HostOptions) {
    super()
  }

  /** The id its tracker knows it by ('' until it joined). */
  get hostId(): string {
    return this.tracker?.hostId ?? ''
  }

  /** Sessions open on this host now (0 before it serves). */
  /** Next hops this host punched to, or failed to (their seams go through the client): the Swarm screen's. */
  seams(): { hostId: string; path: 'punched' | 'relayed' }[] {
    return this.serving?.seams() ?? []
  }

  get activeSessions(): number {
    return this.serving?.activeSessions ?? 0
  }

  /** Positions its blocks have run, over every session: what a prefix cache saves is what this does not count. */
  get computedPositions(): { all: number; prompts: number } {
    return this.serving?.computedPositions ?? { all: 0, prompts: 0 }
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
    const { options, halt } = this
    halt.check()
    const identity = await NodeIdentity.loadOrCreate(options.dataDir)
    const measured = await hardwareProfile(options.dataDir, { threads: options.threads })
    // The tracker places by what the host will use: no GPUs when told to stay on the CPU.
    const profile = options.device === 'cpu' ? { ...measured, gpus: [] } : measured
    halt.check()
    const log = (line: string) => this.log(line)
    const tracker: TrackerSession = new TrackerSession({
      trackerUrl: options.trackerUrl,
      identity,
      profile,
      halt,
      log,
      state: () => this.state,
      heartbeat: () => serving.heartbeat(),
      onHeartbeat: () => serving.reportMeasuredSpeed(),
      relayed: (frame, from) => serving.handleRelayed(frame, from),
      punched: (offer, from) => serving.acceptPunch(offer, from),
    })
    const serving: HostServing = new HostServing({
      options,
      identity,
      profile,
      halt,
      tracker,
      log,
      state: () => this.state,
      setState: (state) => {
        this.state = state
      },
      publish: (state) => this.publishState(state),
      loadRuntime: (runtimeOptions) => this.loadRuntime(runtimeOptions),
      progress: (p) => this.emit('progress', p),
    })
    this.tracker = tracker
    this.serving = serving
    await tracker.join()
    if (options.modelId !== undefined) await this.serve(options.modelId, options.blocks ?? 'auto')
  }

  /**
   * Fetches, verifies, loads and serves blocks of a model. Checks for stop() after every step and
   * throws 'stopped' then; what it made so far (runtime, server) is let go by stop().
   */
  async serve(modelId: string, range: BlockRange | 'auto'): Promise<void> {
    const { tracker, serving } = this
    if (tracker === undefined || serving === undefined)
      throw new NeuronError('not_started', 'start the host before serving')
    const { manifest, torrent } = await tracker.model(modelId)
    this.halt.check()
    const blocks = range === 'auto' ? await tracker.placedRange(modelId) : range
    this.halt.check()
    if (blocks[0] < 0 || blocks[1] > manifest.nLayer || blocks[0] >= blocks[1]) {
      throw new NeuronError(
        'bad_option',
        `--blocks ${blocks[0]}:${blocks[1]} is not a range of ${modelId}'s blocks [0, ${manifest.nLayer}).`,
      )
    }
    await serving.serve(modelId, manifest, torrent, blocks)
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
    if (this.serving?.started && this.tracker?.connected) {
      await this.publishState({ ...this.state, status: 'draining' }).catch(() => {})
      await this.serving.drain(timeoutMs)
    }
    this.tracker?.stopHeartbeats()
    await this.serving?.close()
    // What was served is handed in before leaving (best effort: a tracker that is away misses it).
    await this.tracker?.close()
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
    const tracker = this.tracker
    if (!tracker?.connected) return
    const { endpoint, relay } = await tracker.sendState(state)
    if (relay !== undefined) this.serving?.assignRelay(relay)
    // the endpoint the tracker proved by dialing back (null: relayed), as the swarm will reach this host
    if (endpoint !== undefined && endpoint !== this.state.endpoint && this.state === state) {
      this.state = { ...state, endpoint }
      this.emit('state', this.state)
    }
  }
}

export function defaultDataDir(): string {
  return join(process.env.HOME ?? '.', '.neuron')
}
