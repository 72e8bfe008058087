import { constants } from 'node:fs'
import { access, chmod, copyFile, mkdir, stat, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { NodeIdentity, nodeIdOf } from '../../../identity/keys'
import {
  type Ack,
  type AppEventData,
  type AppEventName,
  AppEvents,
  type AppHandlers,
  ClientToTracker,
  callRpc,
  DashboardReceipt,
  describeIssues,
  dispatchAppCall,
  type HostingStatus,
  Limits,
  type Manifest,
  NeuronError,
  type RpcRequest,
  type RpcResponse,
  type Settings,
  type SettingsUpdate,
} from '../../../protocol'
import type { Tracker } from '../../../tracker/server'
import { DEFAULT_MODEL } from '../cli/demo'
import { hardwareProfile } from '../hardware'
import { ChatRunner } from './chat'
import { computerView, limitedProfile } from './computer'
import { fetchHostDashboard, toEarnings, toReputation } from './dashboard'
import { HostingController } from './hosting'
import { withCredits } from './preview'
import { SettingsStore } from './settings-store'
import { probeTracker, SwarmConnection } from './swarm-connection'

export interface AppBackendOptions {
  readonly dataDir: string
  /** Overrides the saved setting for this run (null: the embedded swarm); not saved. */
  readonly trackerUrl?: string | null
  /** GGUFs the embedded swarm publishes at start; default the tiny stories260K model. */
  readonly defaultModels?: readonly string[]
  /** Runtime threads for this run, over the saved limit. */
  readonly threads?: number
  readonly log?: (line: string) => void
}

export type AppEventListener = (event: AppEventName, data: unknown) => void

/** Tracker calls from the app give up sooner than the library's default: a person is waiting. */
const RPC_TIMEOUT_MS = 10_000
const RECONNECT_MAX_MS = 30_000

/**
 * The app's backend: every AppApi method over the host library, the swarm client and (by default)
 * a private tracker in this process. Knows nothing of Electron or HTTP: Electron's IPC and the
 * browser mode's WebSocket are thin adapters over `call` and `onEvent`.
 */
export class AppBackend {
  readonly handlers: AppHandlers
  private readonly listeners = new Set<AppEventListener>()
  private readonly hosting: HostingController
  private readonly chats: ChatRunner
  private readonly manifests = new Map<string, Promise<Manifest>>()
  /** The tracker setting in force: the saved one, or this run's override. */
  private trackerSetting: string | null
  /** Seen in dashboard pushes: the app's consumer balance (remote trackers) and this host's balance. */
  private accountBalanceSeen: { accountId: string; balanceMicro: number } | null = null
  private hostBalanceSeen: number | null = null
  /** Settings and identity changes run one at a time. */
  private exclusive: Promise<unknown> = Promise.resolve()
  private closing = false

  private constructor(
    readonly dataDir: string,
    private readonly settings: SettingsStore,
    private identity: NodeIdentity,
    private connection: SwarmConnection,
    private limits: Limits,
    private readonly defaultModels: readonly string[],
    private readonly log: (line: string) => void,
    trackerSetting: string | null,
  ) {
    this.trackerSetting = trackerSetting
    this.hosting = new HostingController({
      dataDir,
      trackerUrl: () => this.connection.trackerUrl,
      limits: () => this.limits,
      manifest: (modelId) => this.manifest(modelId),
      servedBlockTokens: async () => (await fetchHostDashboard(this.connection.trackerUrl, this.hostId)).served_block_tokens,
      remember: async (choice) => {
        await this.settings.update({ hosting: choice === null ? null : { ...choice } })
      },
      emit: (status) => this.emit('hosting.status', status),
      log,
    })
    this.chats = new ChatRunner({
      client: () => this.connection.client,
      trackerUrl: () => this.connection.trackerUrl,
      emit: (event, data) => this.emit(event, data),
      log,
    })
    this.handlers = this.makeHandlers()
  }

  static async start(options: AppBackendOptions): Promise<AppBackend> {
    const log = options.log ?? (() => {})
    const dataDir = await resolveDataDir(resolve(options.dataDir), log)
    const settings = await SettingsStore.open(dataDir)
    const identity = await NodeIdentity.loadOrCreate(dataDir)
    const saved = settings.value
    const threads = options.threads ?? saved.limits.threads
    const profile = await hardwareProfile(dataDir, threads === undefined ? {} : { threads })
    const limits = Limits.parse({
      diskBytes: null,
      memoryBytes: null,
      useGpu: true,
      threads: profile.threads,
      ...saved.limits,
      ...(threads === undefined ? {} : { threads }),
    })
    const trackerSetting = options.trackerUrl === undefined ? saved.trackerUrl : options.trackerUrl
    const defaultModels = options.defaultModels ?? [DEFAULT_MODEL]
    const connection = await SwarmConnection.open({ dataDir, trackerUrl: trackerSetting, identity, defaultModels, addedModels: saved.addedModels, log })
    const backend = new AppBackend(dataDir, settings, identity, connection, limits, defaultModels, log, trackerSetting)
    backend.watch(connection)
    if (saved.hosting !== null) {
      log(
        `${saved.hosting.paused ? 'hosting paused' : 'resuming hosting'}: ${saved.hosting.modelId} blocks [${saved.hosting.blocks[0]}, ${saved.hosting.blocks[1]})`,
      )
      backend.hosting.restore(saved.hosting)
    }
    return backend
  }

  /** The tracker this backend is connected to now. */
  get trackerUrl(): string {
    return this.connection.trackerUrl
  }

  /** The in-process tracker of the embedded default; null on a remote tracker. */
  get embeddedTracker(): Tracker | null {
    return this.connection.embedded
  }

  get hostId(): string {
    return nodeIdOf(this.identity.publicKey)
  }

  /** Runs one renderer call; never throws (see dispatchAppCall). */
  call(method: string, input: unknown): Promise<Ack<unknown>> {
    return dispatchAppCall(this.handlers, method, input)
  }

  onEvent(listener: AppEventListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Stops chats, drains hosting, closes the client, the publisher's seeds and the embedded tracker. */
  async close(): Promise<void> {
    if (this.closing) return
    this.closing = true
    this.chats.stopAll()
    await this.hosting.close()
    await this.connection.close()
    this.listeners.clear()
  }

  private emit<E extends AppEventName>(event: E, data: AppEventData<E>): void {
    const parsed = AppEvents[event].safeParse(data)
    if (!parsed.success) {
      this.log(`not sent: ${describeIssues(event, parsed.error)}`)
      return
    }
    for (const l of this.listeners) {
      try {
        l(event, parsed.data)
      } catch (error) {
        this.log(`an event listener failed on ${event}: ${error instanceof Error ? error.message : error}`)
      }
    }
  }

  private makeHandlers(): AppHandlers {
    return {
      'computer.get': async ({ refresh }) => computerView(await hardwareProfile(this.dataDir, { threads: this.limits.threads, refresh }), this.limits),
      'models.list': () => this.rpc('models.list', {}),
      'models.add': async ({ path }) => {
        const source = resolve(path)
        const modelId = await this.connection.publish(source)
        const added = this.settings.value.addedModels
        if (!added.includes(source) && !this.defaultModels.includes(source)) await this.settings.update({ addedModels: [...added, source] })
        return { modelId }
      },
      'hosting.preview': async ({ modelId }) => {
        const profile = limitedProfile(await hardwareProfile(this.dataDir, { threads: this.limits.threads }), this.limits)
        const [placement, manifest] = await Promise.all([this.rpc('placement.preview', { modelId, profile }), this.manifest(modelId)])
        return withCredits(placement, manifest)
      },
      'hosting.start': async ({ modelId, blocks }) => {
        const manifest = await this.manifest(modelId)
        if (blocks[1] > manifest.nLayer) {
          throw new NeuronError(
            'bad_request',
            `blocks [${blocks[0]}, ${blocks[1]}) run past ${modelId}'s ${manifest.nLayer} blocks; pick a range within [0, ${manifest.nLayer})`,
          )
        }
        return this.hosting.start(modelId, blocks)
      },
      'hosting.pause': () => this.hosting.pause(),
      'hosting.resume': () => this.hosting.resume(),
      'hosting.stop': () => this.hosting.stop(),
      'hosting.status': () => this.hosting.status(),
      'earnings.get': async () => {
        const board = await fetchHostDashboard(this.trackerUrl, this.hostId)
        const account = this.connection.accountBalance(this.identity.publicKey)
        return toEarnings(this.hostId, board, account === undefined ? this.accountBalanceSeen : account)
      },
      'reputation.get': async () => toReputation(this.hostId, await fetchHostDashboard(this.trackerUrl, this.hostId)),
      'chat.send': (request) => this.chats.send(request),
      'chat.stop': ({ chatId }) => this.chats.stop(chatId),
      'swarm.get': async () => {
        const [{ hosts }, { models }] = await Promise.all([this.rpc('hosts.list', {}), this.rpc('models.list', {})])
        return { trackerUrl: this.trackerUrl, hosts, models }
      },
      'settings.get': () => this.currentSettings(),
      'settings.update': (update) => this.one(() => this.updateSettings(update)),
      'identity.export': () => ({ pem: this.identity.exportPrivatePem(), publicKey: this.identity.publicKey }),
      'identity.import': ({ pem }) => this.one(() => this.importIdentity(pem)),
    }
  }

  private currentSettings(): Settings {
    return {
      trackerUrl: this.trackerSetting,
      connectedTrackerUrl: this.trackerUrl,
      dataDir: this.settings.value.dataDir ?? this.dataDir,
      publicKey: this.identity.publicKey,
      hostId: this.hostId,
      limits: this.limits,
    }
  }

  /** Checks every field first (a tracker URL must answer); only then changes anything. */
  private async updateSettings(update: SettingsUpdate): Promise<Settings> {
    const limits = Limits.safeParse({ ...this.limits, ...update.limits })
    if (!limits.success) throw new NeuronError('bad_request', describeIssues('settings.update limits', limits.error))
    if (update.dataDir !== undefined) await checkWritableDir(update.dataDir)
    const trackerUrl = update.trackerUrl === undefined ? this.trackerSetting : update.trackerUrl === null ? null : update.trackerUrl.replace(/\/+$/, '')
    if (trackerUrl !== this.trackerSetting) {
      if (trackerUrl !== null) await probeTracker(trackerUrl)
      await this.reconnect(trackerUrl, this.identity)
      this.trackerSetting = trackerUrl
    }
    this.limits = limits.data
    const dataDir = update.dataDir === undefined ? this.settings.value.dataDir : resolve(update.dataDir)
    if (dataDir !== this.settings.value.dataDir && dataDir !== null) this.log(`data dir ${dataDir} takes effect at the next start`)
    // A --tracker override for this run is saved only when the user picks a tracker here.
    await this.settings.update({
      ...(update.trackerUrl === undefined ? {} : { trackerUrl }),
      dataDir,
      limits: { ...this.settings.value.limits, ...update.limits },
    })
    return this.currentSettings()
  }

  private async importIdentity(pem: string): Promise<Settings> {
    const phase = this.hosting.status().phase
    if (phase !== 'idle') throw new NeuronError('hosting_busy', `hosting is ${phase}; stop hosting before replacing this computer's identity`)
    let identity: NodeIdentity
    try {
      identity = NodeIdentity.fromPem(pem)
    } catch {
      throw new NeuronError(
        'bad_identity',
        'that is not an ed25519 private key in PEM form (-----BEGIN PRIVATE KEY-----…); paste the key identity.export gave you',
      )
    }
    const path = join(this.dataDir, 'identity.pem')
    const previous = this.identity
    await this.reconnect(this.trackerSetting, identity)
    try {
      await writeFile(path, identity.exportPrivatePem(), { mode: 0o600 })
      await chmod(path, 0o600)
    } catch (error) {
      await this.reconnect(this.trackerSetting, previous).catch(() => {})
      throw error
    }
    this.log(`identity replaced: now ${identity.id}`)
    return this.currentSettings()
  }

  /**
   * Moves to another tracker or identity; hosting stops there. The new swarm is joined before the
   * old one is left, so a failure changes nothing, except when both are the embedded one (they share
   * its database): that is left first, and rejoined on failure.
   */
  private async reconnect(trackerUrl: string | null, identity: NodeIdentity): Promise<void> {
    const old = this.connection
    const oldIdentity = this.identity
    const open = (url: string | null, id: NodeIdentity) =>
      SwarmConnection.open({
        dataDir: this.dataDir,
        trackerUrl: url,
        identity: id,
        defaultModels: this.defaultModels,
        addedModels: this.settings.value.addedModels,
        log: this.log,
      })
    const sharesDatabase = old.embedded !== null && trackerUrl === null
    const next = sharesDatabase ? undefined : await open(trackerUrl, identity)
    this.chats.stopAll()
    if (!this.hosting.idle) await this.hosting.stop()
    await old.close()
    if (next !== undefined) {
      this.adopt(next, identity)
      return
    }
    try {
      this.adopt(await open(trackerUrl, identity), identity)
    } catch (error) {
      this.log(`could not switch (${error instanceof Error ? error.message : error}); back to the previous swarm`)
      this.adopt(await open(null, oldIdentity), oldIdentity)
      throw error
    }
  }

  private adopt(next: SwarmConnection, identity: NodeIdentity): void {
    this.connection = next
    this.identity = identity
    this.accountBalanceSeen = null
    this.hostBalanceSeen = null
    this.manifests.clear()
    this.watch(next)
  }

  /** Subscribes to this host's dashboard pushes and rejoins a lost remote tracker, backing off to 30 s. */
  private watch(connection: SwarmConnection): void {
    const socket = connection.client.tracker
    socket.on('dashboard.receipt', (raw: unknown) => this.onReceipt(raw))
    callRpc(socket, ClientToTracker, 'dashboard.subscribe', { hostIds: [this.hostId] }, RPC_TIMEOUT_MS).catch((e: Error) =>
      this.log(`dashboard pushes unavailable: ${e.message}`),
    )
    socket.once('disconnect', (reason) => {
      if (this.closing || this.connection !== connection || reason === 'io client disconnect') return
      this.log(`lost the tracker ${connection.trackerUrl} (${reason}); joining again`)
      void this.rejoin(connection)
    })
  }

  private async rejoin(connection: SwarmConnection): Promise<void> {
    for (let delayMs = 1000; !this.closing && this.connection === connection; delayMs = Math.min(RECONNECT_MAX_MS, delayMs * 2)) {
      await new Promise((r) => setTimeout(r, delayMs).unref())
      if (this.closing || this.connection !== connection) return
      try {
        await connection.reconnectClient()
        if (this.closing || this.connection !== connection) return
        this.watch(connection)
        this.log(`tracker ${connection.trackerUrl}`)
        return
      } catch (error) {
        this.log(`tracker still unreachable (${error instanceof Error ? error.message : error})`)
      }
    }
  }

  private onReceipt(raw: unknown): void {
    const parsed = DashboardReceipt.safeParse(raw)
    if (!parsed.success) return
    const p = parsed.data
    const account = this.connection.accountBalance(this.identity.publicKey)
    if (p.accountBalanceMicro !== undefined && account === undefined) {
      this.accountBalanceSeen = { accountId: this.accountBalanceSeen?.accountId ?? `key:${this.hostId}`, balanceMicro: p.accountBalanceMicro }
    }
    // This host's room gets every receipt it signs; the account room's copy of the same one is skipped.
    if (p.hostId !== this.hostId || p.accountBalanceMicro !== undefined) return
    const earnedMicro = this.hostBalanceSeen === null ? 0 : p.hostBalanceMicro - this.hostBalanceSeen
    this.hostBalanceSeen = p.hostBalanceMicro
    this.emit('earnings.receipt', { hostId: p.hostId, ok: p.ok, modelId: p.modelId, earnedMicro, balanceMicro: p.hostBalanceMicro })
    this.hosting.receiptSettled()
  }

  private manifest(modelId: string): Promise<Manifest> {
    let m = this.manifests.get(modelId)
    if (m === undefined) {
      m = this.rpc('model.get', { modelId }).then((r) => r.manifest)
      m.catch(() => this.manifests.delete(modelId))
      this.manifests.set(modelId, m)
    }
    return m
  }

  private async rpc<K extends keyof typeof ClientToTracker & string>(
    event: K,
    request: RpcRequest<typeof ClientToTracker, K>,
  ): Promise<RpcResponse<typeof ClientToTracker, K>> {
    const socket = this.connection.client.tracker
    if (!socket.connected) {
      throw new NeuronError('tracker_unreachable', `not connected to the tracker at ${this.trackerUrl}; joining it again, try in a moment`)
    }
    return callRpc(socket, ClientToTracker, event, request, RPC_TIMEOUT_MS)
  }

  private one<T>(task: () => Promise<T>): Promise<T> {
    const run = this.exclusive.then(task, task)
    this.exclusive = run.catch(() => {})
    return run
  }

  /** For tests and adapters: the current status without a call. */
  get hostingStatus(): HostingStatus {
    return this.hosting.status()
  }
}

async function checkWritableDir(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined)
  if (info === undefined) throw new NeuronError('bad_request', `the data dir ${dir} does not exist; create the folder first, or pick another`)
  if (!info.isDirectory()) throw new NeuronError('bad_request', `the data dir ${dir} is a file, not a folder; pick a folder`)
  try {
    await access(dir, constants.W_OK)
  } catch {
    throw new NeuronError('bad_request', `the data dir ${dir} is not writable by this user; pick a folder you own`)
  }
}

/**
 * The data dir this run uses: the given one, unless its settings name another (a change made in
 * the app applies at the next start); the identity comes along the first time.
 */
async function resolveDataDir(given: string, log: (line: string) => void): Promise<string> {
  await mkdir(given, { recursive: true })
  const moved = (await SettingsStore.open(given)).value.dataDir
  if (moved === null || resolve(moved) === given) return given
  const target = resolve(moved)
  if ((await stat(target).catch(() => undefined))?.isDirectory() !== true) {
    log(`the settings name data dir ${target}, which is not a folder; staying in ${given}`)
    return given
  }
  const settings = await SettingsStore.open(target)
  if (settings.value.dataDir === null) await settings.update({ ...(await SettingsStore.open(given)).value, dataDir: target })
  await copyFile(join(given, 'identity.pem'), join(target, 'identity.pem'), constants.COPYFILE_EXCL).catch(() => {})
  log(`data dir ${target} (named in ${join(given, 'settings.json')})`)
  return target
}
