import { Host } from '../../host/host'
import { SerialQueue } from '../../host/serial-queue'
import {
  type ArtifactProgress,
  artifactsForBlocks,
  type BlockRange,
  type HostingPhase,
  type HostingStatus,
  type HostStatus,
  type Limits,
  type Manifest,
  NeuronError,
  toWireError,
  type WireError,
} from '../../protocol'
import { rangeMemoryBytes } from './computer'
import { formatSize } from './preview'

/**
 * A block range as the app's screens say it (renderer/words.ts): blocks are layers, counted from 1 for people, so
 * [2, 5) is "layers 3–5". Used in the messages a user reads.
 */
export function layerRange(blocks: readonly [number, number]): string {
  return blocks[1] - blocks[0] === 1 ? `layer ${blocks[0] + 1}` : `layers ${blocks[0] + 1}–${blocks[1]}`
}

/** What the app remembers of the hosting choice (settings.json), so a restart resumes it. */
export interface HostingChoice {
  readonly modelId: string
  readonly blocks: BlockRange
  readonly paused: boolean
}

export interface HostingRunnerDeps {
  readonly dataDir: string
  trackerUrl(): string
  /** The app's embedded swarm is open to the home network: its host must listen there too, not on loopback. */
  servesHomeNetwork(): boolean
  limits(): Limits
  manifest(modelId: string): Promise<Manifest>
  /** The tracker's count of block-tokens this host ever served (settled receipts). */
  servedBlockTokens(): Promise<number>
  remember(choice: HostingChoice | null): Promise<void>
  emit(status: HostingStatus): void
  log(line: string): void
}

const PHASE_OF: Record<HostStatus, HostingPhase> = {
  idle: 'downloading',
  downloading: 'downloading',
  loading: 'loading',
  ready: 'serving',
  draining: 'stopping',
}
/** Progress pushes are throttled to this many per second; phase changes go at once. */
const PUSHES_PER_SECOND = 4
const SESSION_POLL_MS = 1000

/**
 * This computer's hosting: one Host at a time, driven through downloading → loading → serving,
 * paused (drained, artifacts kept) and resumed, or stopped. Calls return at once; the phases and
 * download progress arrive as status pushes. Changes run one at a time, in the order called: a stop
 * that waits for a host to drain is never overtaken by a start or another stop.
 */
export class HostingRunner {
  private phase: HostingPhase = 'idle'
  private modelId: string | null = null
  private blocks: BlockRange | null = null
  private artifacts = new Map<string, ArtifactProgress>()
  private error: WireError | null = null
  private host: Host | undefined
  private started: Promise<void> = Promise.resolve()
  /** Changes (start, pause, resume, stop, release, close, restore), one at a time in the order called. */
  private readonly changes = new SerialQueue()
  private closed = false
  /** Bumped whenever a Host is started or let go: events of an older one are ignored. */
  private run = 0
  private startedAt = 0
  private servedBase = 0
  private served = 0
  private lastPush = 0
  private pushTimer: NodeJS.Timeout | undefined
  private servedTimer: NodeJS.Timeout | undefined
  private readonly sessionPoll: NodeJS.Timeout
  private lastSessions = 0

  constructor(private readonly deps: HostingRunnerDeps) {
    this.sessionPoll = setInterval(() => {
      const sessions = this.host?.activeSessions ?? 0
      if (this.phase === 'serving' && sessions !== this.lastSessions) {
        this.lastSessions = sessions
        this.push(false)
      }
    }, SESSION_POLL_MS)
    this.sessionPoll.unref()
  }

  /** The seams this computer's host forwards over, by next hop (Host.seams): none while it serves nothing. */
  seams(): { hostId: string; path: 'punched' | 'relayed' }[] {
    return this.host?.seams() ?? []
  }

  /** Puts back a remembered choice: serving again, or paused where it was paused. */
  restore(choice: HostingChoice): Promise<void> {
    return this.changes.run(async () => {
      this.modelId = choice.modelId
      this.blocks = choice.blocks
      if (choice.paused) {
        this.phase = 'paused'
        this.push(true)
        return
      }
      try {
        await this.check(choice.modelId, choice.blocks)
      } catch (error) {
        this.fail(choice.modelId, error)
        return
      }
      this.begin(choice.modelId, choice.blocks)
    })
  }

  start(modelId: string, blocks: BlockRange): Promise<HostingStatus> {
    return this.changes.run(() => this.startNow(modelId, blocks))
  }

  pause(): Promise<HostingStatus> {
    return this.changes.run(async () => {
      if (this.phase === 'idle' || this.phase === 'paused') return this.status()
      if (this.modelId === null || this.blocks === null) return this.stopNow(true)
      const choice = { modelId: this.modelId, blocks: this.blocks, paused: true }
      await this.halt('paused')
      await this.deps.remember(choice)
      return this.status()
    })
  }

  resume(): Promise<HostingStatus> {
    return this.changes.run(async () => {
      if (this.phase !== 'paused' && this.phase !== 'failed') return this.status()
      if (this.modelId === null || this.blocks === null)
        throw new NeuronError('bad_request', 'nothing to resume: start hosting a model first')
      return this.startNow(this.modelId, this.blocks)
    })
  }

  stop(): Promise<HostingStatus> {
    return this.changes.run(() => this.stopNow(true))
  }

  /** Stops hosting without saving that: the caller (a switch of swarm or identity) has saved hosting: null already. */
  release(): Promise<HostingStatus> {
    return this.changes.run(() => this.stopNow(false))
  }

  /** Drains the host on shutdown; the remembered choice stays, so the next start resumes. */
  close(): Promise<void> {
    this.closed = true
    return this.changes.run(async () => {
      clearInterval(this.sessionPoll)
      clearTimeout(this.servedTimer)
      if (this.host !== undefined)
        await this.halt(this.phase === 'serving' ? 'paused' : this.phase === 'failed' ? 'failed' : 'idle', false)
      clearTimeout(this.pushTimer)
    })
  }

  get idle(): boolean {
    return this.phase === 'idle' || this.phase === 'paused' || this.phase === 'failed'
  }

  /**
   * A receipt for this host settled: recount the block-tokens served since hosting started (at most twice a second).
   */
  receiptSettled(): void {
    if (this.servedTimer !== undefined || this.phase !== 'serving') return
    this.servedTimer = setTimeout(() => {
      this.servedTimer = undefined
      const run = this.run
      this.deps.servedBlockTokens().then(
        (total) => {
          if (run !== this.run) return
          this.served = Math.max(0, total - this.servedBase)
          this.push(true)
        },
        (e: Error) => this.deps.log(`served block-tokens unknown: ${e.message}`),
      )
    }, 500)
  }

  status(): HostingStatus {
    const host = this.host
    const msPerBlock = host?.state.msPerBlock ?? null
    const span = this.blocks === null ? 1 : this.blocks[1] - this.blocks[0]
    return {
      phase: this.phase,
      modelId: this.modelId,
      blocks: this.blocks,
      artifacts: [...this.artifacts.values()],
      serving:
        this.phase === 'serving' && host !== undefined
          ? {
              activeSessions: host.activeSessions,
              maxSessions: host.state.maxSessions,
              tokensPerSecond: msPerBlock === null ? 0 : 1000 / (msPerBlock * span),
              servedBlockTokens: this.served,
              startedAt: this.startedAt,
              endpoint: host.state.endpoint,
            }
          : null,
      error: this.phase === 'failed' ? this.error : null,
    }
  }

  private async startNow(modelId: string, blocks: BlockRange): Promise<HostingStatus> {
    if (this.closed) throw new NeuronError('closing', 'the app is closing; start hosting again after it restarts')
    if (!this.idle) {
      throw new NeuronError(
        'hosting_busy',
        `this computer is already hosting (${this.phase} ${this.modelId}` +
          `${this.blocks === null ? '' : `, ${layerRange(this.blocks)}`}); stop it before starting other layers`,
      )
    }
    await this.check(modelId, blocks)
    // Saved before the host starts: a choice that cannot be saved starts nothing.
    await this.deps.remember({ modelId, blocks, paused: false })
    this.begin(modelId, blocks)
    return this.status()
  }

  private async stopNow(save: boolean): Promise<HostingStatus> {
    await this.halt('idle')
    this.modelId = null
    this.blocks = null
    this.artifacts.clear()
    if (save) await this.deps.remember(null)
    this.push(true)
    return this.status()
  }

  /** Refuses a range the model does not have, or one whose layers and KV cache would not fit the memory limit. */
  private async check(modelId: string, blocks: BlockRange): Promise<void> {
    const manifest = await this.deps.manifest(modelId)
    if (blocks[1] > manifest.nLayer) {
      throw new NeuronError(
        'bad_request',
        `${layerRange(blocks)} run past ${modelId}'s ${manifest.nLayer} layers; pick layers from 1 to ` +
          `${manifest.nLayer}`,
      )
    }
    const limit = this.deps.limits().memoryBytes
    const needed = rangeMemoryBytes(manifest, blocks)
    if (limit !== null && needed > limit) {
      throw new NeuronError(
        'memory_limit',
        `${layerRange(blocks)} of ${modelId} need about ${formatSize(needed)} of memory (weights and ` +
          `KV cache), over this computer's memory limit of ${formatSize(limit)}; raise the limit in Settings or ` +
          `pick fewer layers`,
        { neededBytes: needed, limitBytes: limit },
      )
    }
  }

  private fail(modelId: string, error: unknown): void {
    this.run++
    this.phase = 'failed'
    this.error = toWireError(error)
    this.host = undefined
    this.deps.log(`hosting ${modelId} failed: ${this.error.message}`)
    this.push(true)
  }

  private begin(modelId: string, blocks: BlockRange): void {
    // Callers halt the previous host first; replacing it here would leave it serving.
    if (this.host !== undefined)
      throw new NeuronError('hosting_busy', `a host for ${this.modelId} is still running; stop it first`)
    const limits = this.deps.limits()
    // Made before any state changes: without a swarm connection this throws, and nothing has changed.
    const host = new Host({
      trackerUrl: this.deps.trackerUrl(),
      dataDir: this.deps.dataDir,
      modelId,
      blocks: blocks,
      threads: limits.threads,
      device: limits.useGpu ? 'auto' : 'cpu',
      // on a remote tracker the host listens on every interface anyway; the embedded one is on loopback unless opened
      ...(this.deps.servesHomeNetwork() ? { listenHost: '0.0.0.0' } : {}),
      ...(limits.diskBytes === null ? {} : { quotaBytes: limits.diskBytes }),
      log: (l) => this.deps.log(`host: ${l}`),
    })
    const run = ++this.run
    this.phase = 'downloading'
    this.modelId = modelId
    this.blocks = blocks
    this.error = null
    this.served = 0
    this.startedAt = 0
    this.artifacts.clear()
    this.host = host
    host.on('progress', (p) => {
      if (run !== this.run) return
      const left = Math.max(0, p.totalBytes - p.downloadedBytes)
      this.artifacts.set(p.file, {
        ...p,
        etaSeconds: p.bytesPerSecond > 0 ? left / p.bytesPerSecond : left === 0 ? 0 : null,
      })
      this.push(false)
    })
    host.on('state', (s) => {
      if (run !== this.run) return
      const phase = PHASE_OF[s.status]
      if (phase === 'loading' || phase === 'serving') this.completeArtifacts()
      if (phase === 'serving' && this.phase !== 'serving') this.startedAt = Date.now()
      this.phase = phase
      this.push(true)
    })
    void this.deps
      .manifest(modelId)
      .then((manifest) => {
        if (run !== this.run || this.phase !== 'downloading') return
        for (const a of artifactsForBlocks(manifest, blocks)) {
          if (!this.artifacts.has(a.file))
            this.artifacts.set(a.file, {
              file: a.file,
              downloadedBytes: 0,
              totalBytes: a.bytes,
              bytesPerSecond: 0,
              peers: 0,
              etaSeconds: null,
            })
        }
        this.push(false)
      })
      .catch(() => {})
    void this.deps
      .servedBlockTokens()
      .then((n) => {
        if (run === this.run) this.servedBase = n
      })
      .catch(() => {})
    this.started = host.start().then(
      () => {
        if (run !== this.run) return
        this.phase = 'serving'
        this.push(true)
      },
      (error: unknown) => {
        if (run !== this.run) return
        this.fail(modelId, error)
        void host.stop(0).catch(() => {})
      },
    )
    this.push(true)
  }

  /** Lets the current host go (draining its sessions) and settles in `next`. */
  private async halt(next: HostingPhase, announce = true): Promise<void> {
    const host = this.host
    const run = ++this.run
    this.host = undefined
    if (host !== undefined) {
      this.phase = 'stopping'
      if (announce) this.push(true)
      // Host.stop() first lets a start in progress give up, so nothing it loaded stays open.
      await host.stop().catch((e: Error) => this.deps.log(`stopping the host: ${e.message}`))
      await this.started
      // Changes are serialized, so this is a guard: a newer run's state is not this halt's to settle.
      if (run !== this.run) return
    }
    this.phase = next
    if (announce) this.push(true)
  }

  private completeArtifacts(): void {
    for (const [file, a] of this.artifacts)
      this.artifacts.set(file, { ...a, downloadedBytes: a.totalBytes, etaSeconds: 0 })
  }

  private push(force: boolean): void {
    const now = Date.now()
    const gap = 1000 / PUSHES_PER_SECOND
    if (force || now - this.lastPush >= gap) {
      clearTimeout(this.pushTimer)
      this.pushTimer = undefined
      this.lastPush = now
      this.deps.emit(this.status())
    } else if (this.pushTimer === undefined) {
      this.pushTimer = setTimeout(() => this.push(true), gap - (now - this.lastPush))
      this.pushTimer.unref()
    }
  }
}
