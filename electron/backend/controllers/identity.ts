import { join } from 'node:path'
import type { SerialQueue } from '../../../host/serial-queue'
import { NodeIdentity } from '../../../identity/keys'
import { type HostingPhase, NeuronError, type Settings } from '../../../protocol'
import type { CurrentSwarm } from '../current-swarm'
import { writeFileDurably } from '../durable-file'
import type { GroupHandlers } from './registry'

export interface IdentityDeps {
  readonly dataDir: string
  readonly swarm: CurrentSwarm
  /** The tracker setting in force (a new identity joins the same swarm) and the settings to answer with. */
  readonly settings: {
    readonly trackerSetting: string | null
    current(): Settings
    /** Tells every screen of the settings (a new key and host id) once the change is made. */
    announced(change: Promise<Settings>): Promise<Settings>
  }
  hostingPhase(): HostingPhase
  /** The identity was replaced: what belonged to the previous one (its API key) is given up. */
  replaced(previousPublicKey: string): Promise<void>
  /** Settings, identity and hosting changes, one at a time. */
  readonly changes: SerialQueue
  readonly log: (line: string) => void
}

/** This computer's key pair: exported for a backup, or replaced by another (the swarm is joined again with it). */
export class IdentityController {
  readonly handlers: GroupHandlers<'identity'> = {
    'identity.export': () => ({
      pem: this.deps.swarm.identity.exportPrivatePem(),
      publicKey: this.deps.swarm.identity.publicKey,
    }),
    'identity.import': ({ pem }) => this.deps.changes.run(() => this.deps.settings.announced(this.replace(pem))),
  }

  constructor(private readonly deps: IdentityDeps) {}

  private async replace(pem: string): Promise<Settings> {
    const phase = this.deps.hostingPhase()
    if (phase !== 'idle')
      throw new NeuronError(
        'hosting_busy',
        `hosting is ${phase}; stop hosting before replacing this computer's identity`,
      )
    let identity: NodeIdentity
    try {
      identity = NodeIdentity.fromPem(pem)
    } catch {
      throw new NeuronError(
        'bad_identity',
        'that is not an ed25519 private key in PEM form (-----BEGIN PRIVATE KEY-----…); paste the key ' +
          'identity.export gave you',
      )
    }
    const path = join(this.deps.dataDir, 'identity.pem')
    const previous = this.deps.swarm.identity.publicKey
    await this.deps.swarm.switchTo(this.deps.settings.trackerSetting, identity, async () => {
      // A failed write leaves the previous key whole; a power cut, one key or the other, never half of one.
      await writeFileDurably(path, identity.exportPrivatePem())
    })
    this.deps.log(`identity replaced: now ${identity.id}`)
    await this.deps
      .replaced(previous)
      .catch((e: Error) => this.deps.log(`revoking the previous identity's API key: ${e.message}`))
    return this.deps.settings.current()
  }
}
