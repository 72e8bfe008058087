import { hardwareProfile } from '../../../host/hardware'
import type { Limits } from '../../../protocol'
import { computerView } from '../computer'
import type { GroupHandlers } from './registry'

export interface ComputerDeps {
  readonly dataDir: string
  limits(): Limits
}

/** What this computer has, and what its limits let it serve. */
export class ComputerController {
  readonly handlers: GroupHandlers<'computer'> = {
    'computer.get': async ({ refresh }) =>
      computerView(
        await hardwareProfile(this.deps.dataDir, { threads: this.deps.limits().threads, refresh }),
        this.deps.limits(),
      ),
  }

  constructor(private readonly deps: ComputerDeps) {}
}
