import type { CurrentSwarm } from '../current-swarm'
import { type HostDashboard, toReputation } from '../dashboard'
import type { GroupHandlers } from './registry'

/** This host's reputation as the tracker scores it, from the same dashboard as its earnings. */
export class ReputationController {
  readonly handlers: GroupHandlers<'reputation'> = {
    'reputation.get': async () => toReputation(this.swarm.hostId, await this.dashboard()),
  }

  constructor(
    private readonly swarm: CurrentSwarm,
    private readonly dashboard: () => Promise<HostDashboard>,
  ) {}
}
