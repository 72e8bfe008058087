import { hardwareProfile } from '../../../host/hardware'
import type { SerialQueue } from '../../../host/serial-queue'
import type { Limits } from '../../../protocol'
import { limitedProfile } from '../computer'
import type { CurrentSwarm } from '../current-swarm'
import type { HostingRunner } from '../hosting'
import { filesOnDisk, withBytesOnDisk } from '../on-disk'
import { blameMemoryLimit, withCredits } from '../preview'
import type { GroupHandlers } from './registry'

export interface HostingDeps {
  readonly dataDir: string
  limits(): Limits
  readonly swarm: CurrentSwarm
  readonly runner: HostingRunner
  /** Settings, identity and hosting changes, one at a time. */
  readonly changes: SerialQueue
}

/** What the tracker proposes this computer host, and the hosting it does (HostingRunner). */
export class HostingController {
  readonly handlers: GroupHandlers<'hosting'> = {
    'hosting.preview': async ({ modelId }) => {
      const limits = this.deps.limits()
      const computer = await hardwareProfile(this.deps.dataDir, { threads: limits.threads })
      const placement = await this.deps.swarm.rpc('placement.preview', {
        modelId,
        profile: limitedProfile(computer, limits),
      })
      const manifest = await this.deps.swarm.manifest(modelId)
      return withBytesOnDisk(
        withCredits(blameMemoryLimit(placement, computer, limits)),
        manifest,
        await filesOnDisk(this.deps.dataDir, manifest),
      )
    },
    // In line with settings and identity changes: a start never lands in the middle of a switch of swarm.
    'hosting.start': ({ modelId, blocks }) => this.deps.changes.run(() => this.deps.runner.start(modelId, blocks)),
    'hosting.pause': () => this.deps.changes.run(() => this.deps.runner.pause()),
    'hosting.resume': () => this.deps.changes.run(() => this.deps.runner.resume()),
    'hosting.stop': () => this.deps.changes.run(() => this.deps.runner.stop()),
    'hosting.status': () => this.deps.runner.status(),
  }

  constructor(private readonly deps: HostingDeps) {}
}
