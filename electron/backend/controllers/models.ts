import { resolve } from 'node:path'
import { NeuronError } from '../../../protocol'
import type { CurrentSwarm } from '../current-swarm'
import type { SettingsStore } from '../settings-store'
import type { GroupHandlers } from './registry'

export interface ModelsDeps {
  readonly swarm: CurrentSwarm
  readonly store: SettingsStore
  /** GGUFs the embedded swarm publishes anyway: adding one is not remembered. */
  readonly defaultModels: readonly string[]
  /** This computer's file dialog for a .gguf, where the adapter has one (Electron); null when cancelled. */
  readonly pickFile: (() => Promise<string | null>) | undefined
}

/** The swarm's models, and the GGUFs this computer adds to it (remembered, and seeded at every start). */
export class ModelsController {
  readonly handlers: GroupHandlers<'models'> = {
    'models.list': () => this.deps.swarm.rpc('models.list', {}),
    'models.add': async ({ path }) => {
      const source = resolve(path)
      const modelId = await this.deps.swarm.connection.publish(source)
      const added = this.deps.store.value.addedModels
      if (!added.includes(source) && !this.deps.defaultModels.includes(source))
        await this.deps.store.update({ addedModels: [...added, source] })
      return { modelId }
    },
    'models.pick': async () => {
      if (this.deps.pickFile === undefined) {
        throw new NeuronError(
          'not_available',
          'this window cannot show the computer’s file dialog (a browser cannot); type the path of the .gguf file ' +
            'instead',
        )
      }
      return { path: await this.deps.pickFile() }
    },
  }

  constructor(private readonly deps: ModelsDeps) {}
}
