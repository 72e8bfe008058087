import { resolve } from 'node:path'
import { trackerBase } from '../../dataplane/tracker-connection'
import { hardwareProfile } from '../../host/hardware'
import { hubConfigFromEnv } from '../../host/hub/hub-config'
import { SerialQueue } from '../../host/serial-queue'
import { NodeIdentity } from '../../identity/keys'
import { type Ack, type AppHandlers, dispatchAppCall, type HostingStatus, Limits } from '../../protocol'
import type { Tracker } from '../../tracker/server'
import { AppLog } from './app-log'
import { ChatRunner } from './chat'
import { rangeMemoryBytes } from './computer'
import { ApiController } from './controllers/api'
import { ChatController } from './controllers/chat'
import { ComputerController } from './controllers/computer'
import { ConversationsController } from './controllers/conversations'
import { EarningsController } from './controllers/earnings'
import { HostingController } from './controllers/hosting'
import { HubController } from './controllers/hub'
import { IdentityController } from './controllers/identity'
import { LanController } from './controllers/lan'
import { LogController } from './controllers/log'
import { ModelsController } from './controllers/models'
import { type ControllerRegistry, handlersOf } from './controllers/registry'
import { ReputationController } from './controllers/reputation'
import { SettingsController } from './controllers/settings'
import { SwarmController } from './controllers/swarm'
import { CurrentSwarm } from './current-swarm'
import { resolveDataDir } from './data-dir'
import { DEFAULT_MODEL } from './default-model'
import { AppEventBus, type AppEventListener } from './events'
import { HostingRunner } from './hosting'
import { HubDownloads } from './hub-downloads'
import { admittedKeys } from './lan/admission'
import { LanPresence } from './lan/presence'
import type { SettingsStore } from './settings-store'
import { embeddedAllowList, SwarmConnection } from './swarm-connection'

export type { AppEventListener } from './events'

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
  /**
   * Advertise and browse by mDNS while the home-network switch
   * is on (default true; tests outside a namespace turn it off).
   */
  readonly mdns?: boolean
}

/** What start() has read and opened before the controllers are built. */
interface Opened {
  readonly dataDir: string
  readonly store: SettingsStore
  readonly identity: NodeIdentity
  readonly connection: SwarmConnection
  readonly limits: Limits
  readonly trackerSetting: string | null
  readonly defaultModels: readonly string[]
  readonly pickFile: (() => Promise<string | null>) | undefined
  readonly mdns: boolean | undefined
  readonly log: (line: string) => void
  /** The same lines, kept for the Log screen. */
  readonly appLog: AppLog
}

/**
 * The app's backend: every AppApi method over the host library, the swarm client and (by default)
 * a private tracker in this process, as one controller per group of methods (controllers/). Knows
 * nothing of Electron or HTTP: Electron's IPC and the browser mode's WebSocket are thin adapters
 * over `call` and `onEvent`.
 */
export class AppBackend {
  readonly dataDir: string
  readonly handlers: AppHandlers
  private readonly events: AppEventBus
  private readonly swarm: CurrentSwarm
  private readonly hosting: HostingRunner
  private readonly chats: ChatRunner
  private readonly earnings: EarningsController
  private readonly lan: LanPresence
  private readonly hubDownloads: HubDownloads
  private readonly settingsStore: SettingsStore
  private readonly log: (line: string) => void
  private closing = false

  private constructor(o: Opened) {
    const { dataDir, store, log } = o
    this.dataDir = dataDir
    this.settingsStore = store
    this.log = log
    this.events = new AppEventBus(log)
    // Settings, identity and hosting changes run one at a time.
    const changes = new SerialQueue()
    this.swarm = new CurrentSwarm(
      {
        dataDir,
        defaultModels: o.defaultModels,
        addedModels: () => store.value.addedModels,
        allowedKeys: (lanOpen) => admittedKeys({ ...store.value, lanOpen }),
        lanOpen: () => store.value.lanOpen,
        trackerPort: () => store.value.trackerPort,
        keepTrackerPort: async (trackerPort) => {
          await store.update({ trackerPort })
        },
        leave: () => this.leave(),
        switched: () => this.earnings.forget(),
        joined: (socket) => this.earnings.subscribe(socket),
        linkChanged: (status) => this.events.emit('swarm.status', status),
        log,
      },
      o.connection,
      o.identity,
    )
    const swarm = this.swarm
    const settings = new SettingsController(
      {
        dataDir,
        store,
        swarm,
        changes,
        canPickFiles: o.pickFile !== undefined,
        lanChanged: () => this.syncLan(),
        restoreHosting: (choice) => this.hosting.restore(choice),
        hostingNeeds: async () => {
          const { phase, modelId, blocks } = this.hosting.status()
          if (phase === 'idle' || phase === 'failed' || modelId === null || blocks === null) return null
          return { modelId, blocks, bytes: rangeMemoryBytes(await swarm.manifest(modelId), blocks) }
        },
        changed: (current) => this.events.emit('settings.changed', current),
        log,
      },
      o.limits,
      o.trackerSetting,
    )
    this.lan = new LanPresence({
      identity: () => swarm.identity,
      paired: () => store.value.pairedApps,
      admit: async (key, name) => {
        await store.update({
          pairedApps: [
            ...store.value.pairedApps.filter((p) => p.key !== key),
            { key, name, role: 'asked', at: Date.now() },
          ],
        })
        swarm.embedded?.admission.set(embeddedAllowList(admittedKeys(store.value), swarm.identity))
      },
      join: async (trackerUrl, peer) => {
        await store.update({
          pairedApps: [
            ...store.value.pairedApps.filter((p) => p.key !== peer.key),
            { ...peer, role: 'asking', at: Date.now() },
          ],
        })
        await settings.handlers['settings.update']({ trackerUrl }, undefined)
      },
      changed: (view) => this.events.emit('lan.changed', view),
      log: (line) => log(`lan: ${line}`),
      ...(o.mdns === undefined ? {} : { mdns: o.mdns }),
    })
    this.earnings = new EarningsController({
      swarm,
      events: this.events,
      receiptSettled: () => this.hosting.receiptSettled(),
      log,
    })
    this.hosting = new HostingRunner({
      dataDir,
      trackerUrl: () => swarm.connection.trackerUrl,
      servesHomeNetwork: () => swarm.embedded !== null && store.value.lanOpen,
      limits: () => settings.limits,
      manifest: (modelId) => swarm.manifest(modelId),
      servedBlockTokens: async () => (await this.earnings.dashboard()).served_block_tokens,
      remember: async (choice) => {
        await store.update({ hosting: choice === null ? null : { ...choice } })
      },
      emit: (status) => this.events.emit('hosting.status', status),
      log,
    })
    this.chats = new ChatRunner({
      client: () => swarm.connection.client,
      trackerUrl: () => swarm.trackerUrl,
      emit: (event, data) => this.events.emit(event, data),
      log,
    })
    const limits = () => settings.limits
    const api = new ApiController(swarm, store)
    const models = new ModelsController({ swarm, store, defaultModels: o.defaultModels, pickFile: o.pickFile })
    // Read at each use, as huggingface_hub does: a token saved by `huggingface-cli login` meanwhile counts.
    const hubConfig = () => hubConfigFromEnv()
    this.hubDownloads = new HubDownloads({
      dataDir,
      config: hubConfig,
      add: async (path) => (await models.handlers['models.add']({ path }, undefined)).modelId,
      log,
    })
    const registry = {
      computer: new ComputerController({ dataDir, limits }),
      models,
      hub: new HubController(hubConfig, this.hubDownloads, async () => (await swarm.rpc('models.list', {})).models),
      hosting: new HostingController({ dataDir, limits, swarm, runner: this.hosting, changes }),
      earnings: this.earnings,
      reputation: new ReputationController(swarm, () => this.earnings.dashboard()),
      chat: new ChatController(
        this.chats,
        () => settings.privacy(),
        () => swarm.checkReachable(),
      ),
      conversations: new ConversationsController(dataDir, log),
      log: new LogController(o.appLog),
      swarm: new SwarmController(
        swarm,
        () => store.value.pairedApps,
        () => this.hosting.seams(),
      ),
      lan: new LanController(this.lan),
      api,
      settings,
      identity: new IdentityController({
        dataDir,
        swarm,
        settings,
        hostingPhase: () => this.hosting.status().phase,
        replaced: (previous) => api.identityReplaced(previous),
        changes,
        log,
      }),
    } as const satisfies ControllerRegistry
    this.handlers = handlersOf(registry)
  }

  static async start(options: AppBackendOptions): Promise<AppBackend> {
    const appLog = new AppLog(options.log)
    const log = appLog.add
    const { dataDir, store } = await resolveDataDir(resolve(options.dataDir), log)
    if (store.notice !== null) log(store.notice)
    const identity = await NodeIdentity.loadOrCreate(dataDir)
    const saved = store.value
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
    const connection = await SwarmConnection.open({
      dataDir,
      trackerUrl: trackerSetting,
      identity,
      defaultModels,
      addedModels: saved.addedModels,
      allowedKeys: saved.allowedKeys,
      trackerPort: saved.trackerPort,
      log,
    })
    const backend = new AppBackend({
      dataDir,
      store,
      identity,
      connection,
      limits,
      trackerSetting,
      defaultModels,
      pickFile: options.pickFile,
      // NEURON_MDNS=0: a test outside a network namespace opens the app to the network without multicasting.
      mdns: options.mdns ?? process.env.NEURON_MDNS !== '0',
      log,
      appLog,
    })
    backend.swarm.watch()
    await backend.syncLan()
    if (saved.hosting !== null) {
      log(
        `${saved.hosting.paused ? 'hosting paused' : 'resuming hosting'}: ${saved.hosting.modelId} blocks ` +
          `[${saved.hosting.blocks[0]}, ${saved.hosting.blocks[1]})`,
      )
      void backend.hosting.restore(saved.hosting)
    }
    void backend.hubDownloads.restore()
    return backend
  }

  /** The tracker this backend is connected to now. */
  get trackerUrl(): string {
    return this.swarm.trackerUrl
  }

  /** What the app remembers between runs (settings.json); the browser mode keeps its port there. */
  get settings(): SettingsStore {
    return this.settingsStore
  }

  /** The in-process tracker of the embedded default; null on a remote tracker. */
  get embeddedTracker(): Tracker | null {
    return this.swarm.embedded
  }

  get hostId(): string {
    return this.swarm.hostId
  }

  /** For tests and adapters: the current status without a call. */
  get hostingStatus(): HostingStatus {
    return this.hosting.status()
  }

  /** Runs one renderer call; never throws (see dispatchAppCall). */
  call(method: string, input: unknown): Promise<Ack<unknown>> {
    return dispatchAppCall(this.handlers, method, input)
  }

  onEvent(listener: AppEventListener): () => void {
    return this.events.on(listener)
  }

  /** Stops chats, drains hosting, closes the client, the publisher's seeds and the embedded tracker. */
  async close(): Promise<void> {
    if (this.closing) return
    this.closing = true
    this.hubDownloads.close()
    await this.swarm.close(async () => {
      this.chats.stopAll()
      // the conversations' sessions end while the client is still connected: hosts free their caches, audits run
      await this.chats.closeConversations()
      await this.hosting.close()
    })
    await this.lan.close()
    this.events.clear()
  }

  /** Open to the home network while the switch is on and the app is on its embedded swarm; closed otherwise. */
  private async syncLan(): Promise<void> {
    const { embedded } = this.swarm
    const open = this.settingsStore.value.lanOpen
    await this.lan
      .sync(open && embedded !== null ? { trackerPort: embedded.port } : null, open)
      .catch((e: Error) =>
        this.log(`could not open this app to the home network (${e.message}); turn the switch off and on to retry`),
      )
  }

  /** Ends what ran on the swarm being left: chats (each says why) and hosting (already saved as stopped). */
  private async leave(): Promise<void> {
    this.chats.stopAll("the app's swarm connection changed (a new tracker or identity); send again")
    // the sessions on the swarm being left are ended there in the background (its hops may be gone already)
    void this.chats.closeConversations()
    await this.hosting.release()
  }
}
