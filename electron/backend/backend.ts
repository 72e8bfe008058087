import { constants } from 'node:fs'
import { access, chmod, copyFile, mkdir, rename, stat, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { trackerBase } from '../../client/tracker-connection'
import { hardwareProfile } from '../../host/hardware'
import { NodeIdentity, nodeIdOf } from '../../identity/keys'
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
} from '../../protocol'
import type { Tracker } from '../../tracker/server'
import { ChatRunner } from './chat'
import { computerView, limitedProfile } from './computer'
import { fetchHostDashboard, type HostDashboard, toEarnings, toReputation } from './dashboard'
import { DEFAULT_MODEL } from './default-model'
import { HostingController } from './hosting'
import { hostShare, withCredits } from './preview'
import { SettingsStore } from './settings-store'
import { SwarmConnection } from './swarm-connection'

export interface AppBackendOptions {
  readonly dataDir: string
  /** Overrides the saved setting for this run (null: the embedded swarm); not saved. */
  readonly trackerUrl?: string | null
  /** GGUFs the embedded swarm publishes at start; default the tiny stories260K model. */
  readonly defaultModels?: readonly string[]
  /** Runtime threads for this run, over the saved limit. */
  readonly threads?: number
  /** This computer's file dialog for a .gguf, where the adapter has one (Electron); null when cancelled. */
  readonly pickFile?: () => Promise<string | null>
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
  /** This host's balance as last told (dashboard or receipt push): a push's earnings are its balance less this. */
  private hostBalanceSeen: number | null = null
  /** The app account's balance as a remote tracker's last push told it. */
  private accountBalanceSeen: number | null = null
  /** Receipt pushes for this host so far: a dashboard fetched while one arrived has an older balance than the push. */
  private receiptPushes = 0
  /** The last tracker connected to, for messages and settings while `connection` is null. */
  private lastTrackerUrl: string
  /** Why there is no swarm connection, when the embedded swarm failed to start again after a failed switch. */
  private lost: string | null = null
  /** Settings, identity and hosting changes run one at a time. */
  private exclusive: Promise<unknown> = Promise.resolve()
  private closing = false

  private constructor(
    readonly dataDir: string,
    private readonly settings: SettingsStore,
    private identity: NodeIdentity,
    /** null only while the embedded swarm is switched to another identity, or after it failed to start again. */
    private connection: SwarmConnection | null,
    private limits: Limits,
    private readonly defaultModels: readonly string[],
    private readonly log: (line: string) => void,
    trackerSetting: string | null,
    private readonly pickFile: (() => Promise<string | null>) | undefined,
  ) {
    this.trackerSetting = trackerSetting
    this.lastTrackerUrl = connection?.trackerUrl ?? ''
    this.hosting = new HostingController({
      dataDir,
      trackerUrl: () => this.swarm.trackerUrl,
      limits: () => this.limits,
      manifest: (modelId) => this.manifest(modelId),
      servedBlockTokens: async () => (await this.hostDashboard()).served_block_tokens,
      remember: async (choice) => {
        await this.settings.update({ hosting: choice === null ? null : { ...choice } })
      },
      emit: (status) => this.emit('hosting.status', status),
      log,
    })
    this.chats = new ChatRunner({
      client: () => this.swarm.client,
      trackerUrl: () => this.trackerUrl,
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
    const chosen = options.trackerUrl === undefined ? saved.trackerUrl : options.trackerUrl
    // Kept as settings.update keeps it, so picking the same tracker there is no change.
    const trackerSetting = chosen === null ? null : trackerBase(chosen)
    const defaultModels = options.defaultModels ?? [DEFAULT_MODEL]
    const connection = await SwarmConnection.open({ dataDir, trackerUrl: trackerSetting, identity, defaultModels, addedModels: saved.addedModels, log })
    const backend = new AppBackend(dataDir, settings, identity, connection, limits, defaultModels, log, trackerSetting, options.pickFile)
    backend.watch(connection)
    if (saved.hosting !== null) {
      log(
        `${saved.hosting.paused ? 'hosting paused' : 'resuming hosting'}: ${saved.hosting.modelId} blocks [${saved.hosting.blocks[0]}, ${saved.hosting.blocks[1]})`,
      )
      void backend.hosting.restore(saved.hosting)
    }
    return backend
  }

  /** The tracker this backend is connected to now. */
  get trackerUrl(): string {
    return this.connection?.trackerUrl ?? this.lastTrackerUrl
  }

  /** The in-process tracker of the embedded default; null on a remote tracker. */
  get embeddedTracker(): Tracker | null {
    return this.connection?.embedded ?? null
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
    await this.connection?.close()
    this.listeners.clear()
  }

  private emit<E extends AppEventName>(event: E, data: AppEventData<E>): void {
    const parsed = AppEvents[event].safeParse(data)
    if (!parsed.success) {
      const issues = describeIssues(event, parsed.error)
      this.log(`not sent: ${issues}`)
      // The renderer shows an answer as streaming until chat.done or chat.error: end it either way.
      if (event === 'chat.done') {
        const { chatId } = data as AppEventData<'chat.done'>
        this.emit('chat.error', { chatId, error: { code: 'internal', message: `the answer ended, but its summary was malformed (${issues}); send again` } })
      }
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
        const modelId = await this.swarm.publish(source)
        const added = this.settings.value.addedModels
        if (!added.includes(source) && !this.defaultModels.includes(source)) await this.settings.update({ addedModels: [...added, source] })
        return { modelId }
      },
      'models.pick': async () => {
        if (this.pickFile === undefined) {
          throw new NeuronError(
            'not_available',
            'this window cannot show the computer’s file dialog (a browser cannot); type the path of the .gguf file instead',
          )
        }
        return { path: await this.pickFile() }
      },
      'hosting.preview': async ({ modelId }) => {
        const profile = limitedProfile(await hardwareProfile(this.dataDir, { threads: this.limits.threads }), this.limits)
        return withCredits(await this.rpc('placement.preview', { modelId, profile }))
      },
      // In line with settings and identity changes: a start never lands in the middle of a switch of swarm.
      'hosting.start': ({ modelId, blocks }) => this.one(() => this.hosting.start(modelId, blocks)),
      'hosting.pause': () => this.one(() => this.hosting.pause()),
      'hosting.resume': () => this.one(() => this.hosting.resume()),
      'hosting.stop': () => this.one(() => this.hosting.stop()),
      'hosting.status': () => this.hosting.status(),
      'earnings.get': async () => {
        const board = await this.hostDashboard()
        // The embedded tracker tells the app's account; a remote one only its balance, in the pushes after a paid answer.
        const embedded = this.connection?.accountBalance(this.identity.publicKey)
        const account = embedded !== undefined ? embedded : this.accountBalanceSeen === null ? null : { accountId: null, balanceMicro: this.accountBalanceSeen }
        return toEarnings(this.hostId, board, account)
      },
      'reputation.get': async () => toReputation(this.hostId, await this.hostDashboard()),
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
      canPickFiles: this.pickFile !== undefined,
    }
  }

  /**
   * Checks every field (a tracker URL must answer) and saves them before anything changes: on any
   * error the settings, the connection and hosting are as they were.
   */
  private async updateSettings(update: SettingsUpdate): Promise<Settings> {
    // SettingsUpdate's schema has checked each limit; absent ones keep their value.
    const limits: Limits = { ...this.limits, ...update.limits }
    if (update.dataDir !== undefined) await checkWritableDir(update.dataDir)
    const trackerSetting = update.trackerUrl === undefined ? this.trackerSetting : update.trackerUrl === null ? null : trackerBase(update.trackerUrl)
    const dataDir = update.dataDir === undefined ? this.settings.value.dataDir : resolve(update.dataDir)
    const switching = trackerSetting !== this.trackerSetting
    const moved = dataDir !== this.settings.value.dataDir
    const save = () =>
      this.settings.update({
        // A --tracker override for this run is saved only when the user picks a tracker here.
        ...(update.trackerUrl === undefined ? {} : { trackerUrl: trackerSetting }),
        dataDir,
        limits: { ...this.settings.value.limits, ...update.limits },
        // Hosting stops on a switch: the next start must not resume it on the new swarm.
        ...(switching ? { hosting: null } : {}),
      })
    if (switching) {
      await this.reconnect(trackerSetting, this.identity, save)
      this.trackerSetting = trackerSetting
    } else {
      await save()
    }
    this.limits = limits
    if (moved) this.log(`data dir ${dataDir} takes effect at the next start`)
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
    await this.reconnect(this.trackerSetting, identity, async () => {
      // Written aside and renamed over: a failed write leaves the previous key whole.
      const temp = `${path}.${process.pid}.tmp`
      await writeFile(temp, identity.exportPrivatePem(), { mode: 0o600 })
      await chmod(temp, 0o600)
      await rename(temp, path)
    })
    this.log(`identity replaced: now ${identity.id}`)
    return this.currentSettings()
  }

  /**
   * Moves to another tracker or identity; hosting stops there. `save` records the change (settings,
   * identity) once the new swarm is joined and before the old one is left, so a failure up to then
   * changes nothing, and nothing fails after it. The embedded swarm shares its database with its
   * successor: see reopenEmbedded.
   */
  private async reconnect(trackerUrl: string | null, identity: NodeIdentity, save: () => Promise<unknown>): Promise<void> {
    const old = this.connection
    if (old?.embedded != null && trackerUrl === null) return this.reopenEmbedded(identity, save)
    const next = await this.openAndSave(trackerUrl, identity, save)
    // Saved: the switch goes through from here (a host that fails to stop is logged and let go).
    await this.leave().catch((e: Error) => this.log(`leaving the previous swarm: ${e.message}`))
    this.adopt(next, identity)
    await old?.close().catch((e: Error) => this.log(`closing the previous swarm connection: ${e.message}`))
  }

  /**
   * The embedded swarm with another identity: its tracker's database can have one owner, so the old
   * one is left first and joined again on failure. Should that fail too, the backend has no swarm
   * (calls say why) rather than a closed one.
   */
  private async reopenEmbedded(identity: NodeIdentity, save: () => Promise<unknown>): Promise<void> {
    const old = this.connection
    const oldIdentity = this.identity
    await this.leave()
    this.connection = null
    await old?.close().catch((e: Error) => this.log(`closing the previous swarm connection: ${e.message}`))
    try {
      this.adopt(await this.openAndSave(null, identity, save), identity)
    } catch (error) {
      this.log(`could not switch (${error instanceof Error ? error.message : error}); back to the previous swarm`)
      try {
        this.adopt(await this.open(null, oldIdentity), oldIdentity)
      } catch (again) {
        this.lost = `the embedded swarm did not start again (${again instanceof Error ? again.message : again}); restart the app`
        this.log(this.lost)
      }
      throw error
    }
  }

  /** Ends what ran on the swarm being left: chats (each says why) and hosting (already saved as stopped). */
  private async leave(): Promise<void> {
    this.chats.stopAll("the app's swarm connection changed (a new tracker or identity); send again")
    await this.hosting.release()
  }

  /** Opens the next connection and records the change; a failed save closes it unused. */
  private async openAndSave(trackerUrl: string | null, identity: NodeIdentity, save: () => Promise<unknown>): Promise<SwarmConnection> {
    const next = await this.open(trackerUrl, identity)
    try {
      await save()
    } catch (error) {
      await next.close().catch((e: Error) => this.log(`closing the unused connection: ${e.message}`))
      throw error
    }
    return next
  }

  private open(trackerUrl: string | null, identity: NodeIdentity): Promise<SwarmConnection> {
    return SwarmConnection.open({
      dataDir: this.dataDir,
      trackerUrl,
      identity,
      defaultModels: this.defaultModels,
      addedModels: this.settings.value.addedModels,
      log: this.log,
    })
  }

  private adopt(next: SwarmConnection, identity: NodeIdentity): void {
    this.connection = next
    this.lastTrackerUrl = next.trackerUrl
    this.lost = null
    this.identity = identity
    this.hostBalanceSeen = null
    this.accountBalanceSeen = null
    this.manifests.clear()
    this.watch(next)
  }

  /** Subscribes to this host's dashboard pushes and rejoins a lost remote tracker, backing off to 30 s. */
  private watch(connection: SwarmConnection): void {
    const socket = connection.client.tracker
    socket.on('dashboard.receipt', (raw: unknown) => this.onReceipt(raw))
    callRpc(socket, ClientToTracker, 'dashboard.subscribe', { hostIds: [this.hostId] }, RPC_TIMEOUT_MS)
      .then(
        // The balance the first push's earnings are counted from.
        () => this.hostDashboard(),
        (e: Error) => this.log(`dashboard pushes unavailable: ${e.message}`),
      )
      .catch((e: Error) => this.log(`this host's balance unknown until its next receipt: ${e.message}`))
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
    // The account room's pushes (receipts this app paid for) carry its balance; this host's room, what it earned.
    if (p.accountBalanceMicro !== undefined) {
      this.accountBalanceSeen = p.accountBalanceMicro
      return
    }
    if (p.hostId !== this.hostId) return
    this.receiptPushes++
    // The tracker's balance change; before any balance is known, the host's share of the charge at the default fee.
    const earnedMicro = this.hostBalanceSeen !== null ? p.hostBalanceMicro - this.hostBalanceSeen : p.ok ? hostShare(p.chargedMicro) : 0
    this.hostBalanceSeen = p.hostBalanceMicro
    this.emit('earnings.receipt', { hostId: p.hostId, ok: p.ok, modelId: p.modelId, earnedMicro, balanceMicro: p.hostBalanceMicro })
    this.hosting.receiptSettled()
  }

  /** This host's dashboard; its balance becomes the one the next push's earnings are counted from. */
  private async hostDashboard(): Promise<HostDashboard> {
    const hostId = this.hostId
    const pushes = this.receiptPushes
    const board = await fetchHostDashboard(this.trackerUrl, hostId)
    // A push that came meanwhile told a newer balance than this answer may hold.
    if (pushes === this.receiptPushes && hostId === this.hostId) this.hostBalanceSeen = board.balance_micro
    return board
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
    const socket = this.swarm.client.tracker
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

  /** The swarm connection in use; throws (saying why) while there is none. */
  private get swarm(): SwarmConnection {
    if (this.connection === null) throw new NeuronError('tracker_unreachable', this.lost ?? 'the app is switching its swarm connection; try again in a moment')
    return this.connection
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
