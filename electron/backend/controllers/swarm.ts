import { nodeIdOf } from '../../../identity/keys'
import type { PairedApp } from '../../../protocol'
import type { CurrentSwarm } from '../current-swarm'
import type { GroupHandlers } from './registry'

/** The swarm as its tracker lists it: hosts and models. */
export class SwarmController {
  readonly handlers: GroupHandlers<'swarm'> = {
    'swarm.get': async () => {
      const [{ hosts }, { models }] = await Promise.all([
        this.swarm.rpc('hosts.list', {}),
        this.swarm.rpc('models.list', {}),
      ])
      const paired = this.paired().map((p) => ({ hostId: nodeIdOf(p.key), name: p.name }))
      const reached = this.swarm.connection.client.reached()
      const seams = this.seams()
      return { trackerUrl: this.swarm.trackerUrl, hosts, models, thisHostId: this.swarm.hostId, paired, reached, seams }
    },
    'swarm.status': () => this.swarm.status,
  }

  constructor(
    private readonly swarm: CurrentSwarm,
    /** The apps paired on the home network, as saved. */
    private readonly paired: () => readonly PairedApp[],
    /** How this computer's host reaches the next hops it forwards to (HostingRunner.seams). */
    private readonly seams: () => { hostId: string; path: 'punched' | 'relayed' }[] = () => [],
  ) {}
}
