import { resolve } from 'node:path'
import { trackerBase } from '../../../dataplane/tracker-connection'
import type { SerialQueue } from '../../../host/serial-queue'
import { type Limits, NeuronError, type Settings, type SettingsUpdate, type SwarmPrivacy } from '../../../protocol'
import type { CurrentSwarm } from '../current-swarm'
import { checkWritableDir } from '../data-dir'
import { layerRange } from '../hosting'
import { admittedKeys } from '../lan/admission'
import { formatSize } from '../preview'
import type { SavedHosting, SettingsStore } from '../settings-store'
import { embeddedAllowList, probeTracker } from '../swarm-connection'
import type { GroupHandlers } from './registry'

export interface SettingsDeps {
  readonly dataDir: string
  readonly store: SettingsStore
  readonly swarm: CurrentSwarm
  /** Settings, identity and hosting changes, one at a time. */
  readonly changes: SerialQueue
  /** The adapter can show this computer's file dialog (models.pick). */
  readonly canPickFiles: boolean
  /** The home-network switch or the swarm changed: open or close the app to the network. */
  readonly lanChanged: () => Promise<void>
  /** The memory the range this computer hosts (or has paused) needs, weights and KV cache; null while it hosts none. */
  readonly hostingNeeds: () => Promise<{ modelId: string; blocks: readonly [number, number]; bytes: number } | null>
  /** Puts back the hosting left on a tracker the app switched back to (HostingRunner.restore). */
  readonly restoreHosting: (choice: SavedHosting) => Promise<void>
  /** The settings in force changed: every screen is told (settings.changed). */
  readonly changed: (settings: Settings) => void
  readonly log: (line: string) => void
}

/** The user's choices in force: the tracker, the data dir and the limits; a change of tracker switches swarm. */
export class SettingsController {
  readonly handlers: GroupHandlers<'settings'> = {
    'settings.get': () => this.current(),
    'settings.update': (update) => this.deps.changes.run(() => this.announced(this.update(update))),
    'settings.consent': ({ trackerUrl }) => this.deps.changes.run(() => this.announced(this.consent(trackerUrl))),
    'settings.checkTracker': async ({ trackerUrl }) => {
      await probeTracker(trackerUrl)
      return { trackerUrl: trackerBase(trackerUrl) }
    },
  }

  constructor(
    private readonly deps: SettingsDeps,
    private limitsInForce: Limits,
    /** The tracker setting in force: the saved one, or this run's override. */
    private trackerInForce: string | null,
  ) {}

  get limits(): Limits {
    return this.limitsInForce
  }

  get trackerSetting(): string | null {
    return this.trackerInForce
  }

  current(): Settings {
    const { swarm } = this.deps
    return {
      trackerUrl: this.trackerInForce,
      connectedTrackerUrl: swarm.trackerUrl,
      dataDir: this.deps.store.value.dataDir ?? this.deps.dataDir,
      publicKey: swarm.identity.publicKey,
      hostId: swarm.hostId,
      limits: this.limitsInForce,
      canPickFiles: this.deps.canPickFiles,
      notice: this.deps.store.notice,
      privacy: this.privacy(),
      allowedKeys: this.deps.store.value.allowedKeys,
      lanOpen: this.deps.store.value.lanOpen,
    }
  }

  /** The embedded swarm is private (its tracker listens on loopback); any other is public until proven otherwise. */
  privacy(): SwarmPrivacy {
    const tracker = this.trackerInForce
    if (tracker === null) return { level: 'private', consented: true }
    return { level: 'public', consented: this.deps.store.value.consentedTrackers.includes(tracker) }
  }

  /** Tells every screen of settings that changed, and answers them. */
  async announced(change: Promise<Settings>): Promise<Settings> {
    const settings = await change
    this.deps.changed(settings)
    return settings
  }

  /** Remembers the user's consent for the tracker in force; one named other than that changes nothing. */
  private async consent(trackerUrl: string): Promise<Settings> {
    const tracker = this.trackerInForce
    if (tracker === null || trackerBase(trackerUrl) !== tracker) {
      throw new NeuronError(
        'bad_request',
        `consent is asked for the tracker in force (${tracker ?? 'the embedded private swarm, which needs none'}), ` +
          `not ${trackerUrl}; reload the settings and answer again`,
      )
    }
    const { consentedTrackers } = this.deps.store.value
    if (!consentedTrackers.includes(tracker))
      await this.deps.store.update({ consentedTrackers: [...consentedTrackers, tracker] })
    return this.current()
  }

  /**
   * Hosting across a switch to `next`: the choice on the tracker in force is kept under its name (unless
   * `how` is stop), and the one left on `next` before, if any, is what hosts there now.
   */
  private handOverHosting(
    next: string | null,
    how: 'resumeOnReturn' | 'stop',
  ): { returning: SavedHosting | null; byTracker: Record<string, SavedHosting> } {
    const { hosting, hostingByTracker } = this.deps.store.value
    const byTracker = { ...hostingByTracker }
    const leftKey = trackerKey(this.trackerInForce)
    delete byTracker[leftKey]
    if (hosting !== null && how === 'resumeOnReturn') byTracker[leftKey] = hosting
    const returning = byTracker[trackerKey(next)] ?? null
    delete byTracker[trackerKey(next)]
    return { returning, byTracker }
  }

  /**
   * Checks every field (a tracker URL must answer) and saves them before anything changes: on any
   * error the settings, the connection and hosting are as they were.
   */
  private async update(update: SettingsUpdate): Promise<Settings> {
    const { store } = this.deps
    // SettingsUpdate's schema has checked each limit; absent ones keep their value.
    const limits: Limits = { ...this.limitsInForce, ...update.limits }
    if (update.limits?.memoryBytes != null) await this.checkMemoryLimit(update.limits.memoryBytes)
    if (update.dataDir !== undefined) await checkWritableDir(update.dataDir)
    const trackerSetting =
      update.trackerUrl === undefined
        ? this.trackerInForce
        : update.trackerUrl === null
          ? null
          : trackerBase(update.trackerUrl)
    const dataDir = update.dataDir === undefined ? store.value.dataDir : resolve(update.dataDir)
    const switching = trackerSetting !== this.trackerInForce
    const lanOpen = update.lanOpen ?? store.value.lanOpen
    // The embedded tracker binds its address at start: opening or closing it to the network restarts it.
    const rebinding = trackerSetting === null && lanOpen !== store.value.lanOpen
    const moved = dataDir !== store.value.dataDir
    const hand = switching ? this.handOverHosting(trackerSetting, update.hostingOnSwitch ?? 'resumeOnReturn') : null
    const save = () =>
      store.update({
        // A --tracker override for this run is saved only when the user picks a tracker here.
        ...(update.trackerUrl === undefined ? {} : { trackerUrl: trackerSetting }),
        dataDir,
        limits: { ...store.value.limits, ...update.limits },
        // Hosting stops on a switch (kept for a return, unless asked
        // not to); what was left on the new tracker comes back.
        ...(hand === null ? {} : { hosting: hand.returning, hostingByTracker: hand.byTracker }),
        ...(update.allowedKeys === undefined ? {} : { allowedKeys: update.allowedKeys }),
        lanOpen,
      })
    if (switching || rebinding) {
      // A rebind restarts the same swarm: the hosting saved on it (kept by the save) comes back, paused or not.
      const kept = switching ? (hand?.returning ?? null) : store.value.hosting
      await this.deps.swarm.switchTo(trackerSetting, this.deps.swarm.identity, save, lanOpen)
      this.trackerInForce = trackerSetting
      if (kept !== null) {
        const { modelId, blocks, paused } = kept
        this.deps.log(
          `${switching ? 'back on' : 'restarted'} ${trackerSetting ?? 'the embedded swarm'}: ` +
            `${paused ? 'hosting paused' : 'resuming hosting'} ${modelId} blocks [${blocks[0]}, ${blocks[1]})`,
        )
        await this.deps.restoreHosting(kept)
      }
    } else {
      await save()
    }
    this.limitsInForce = limits
    // The embedded tracker takes a new list at once, and closes connections it no longer admits.
    if (update.allowedKeys !== undefined)
      this.deps.swarm.embedded?.admission.set(embeddedAllowList(admittedKeys(store.value), this.deps.swarm.identity))
    if (switching || rebinding || update.lanOpen !== undefined) await this.deps.lanChanged()
    if (moved) this.deps.log(`data dir ${dataDir} takes effect at the next start`)
    return this.current()
  }

  /** Refuses a memory limit under what the hosted range needs: hosting would carry on over it, or fail to resume. */
  private async checkMemoryLimit(limit: number): Promise<void> {
    const needs = await this.deps.hostingNeeds()
    if (needs === null || needs.bytes <= limit) return
    throw new NeuronError(
      'memory_limit',
      `this computer hosts ${layerRange(needs.blocks)} of ${needs.modelId}, which need about ` +
        `${formatSize(needs.bytes)} of memory, over a limit of ${formatSize(limit)}; stop hosting first, or set at ` +
        `least ${formatSize(needs.bytes)}`,
      { neededBytes: needs.bytes, limitBytes: limit },
    )
  }
}

/** The name hosting is kept under for a tracker setting (null: the embedded swarm). */
function trackerKey(setting: string | null): string {
  return setting ?? 'embedded'
}
