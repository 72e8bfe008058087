import type { CurrentSwarm } from '../current-swarm'
import type { GroupHandlers } from './registry'

/** The swarm as its tracker lists it: hosts and models. */
export class SwarmController {
  readonly handlers: GroupHandlers<'swarm'> = {
    'swarm.get': async () => {
      const [{ hosts }, { models }] = await Promise.all([this.swarm.rpc('hosts.list', {}), this.swarm.rpc('models.list', {})])
      return { trackerUrl: this.swarm.trackerUrl, hosts, models }
    },
  }

  constructor(private readonly swarm: CurrentSwarm) {}
}
