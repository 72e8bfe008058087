// Neuron's own programs on the namespace network, as the hole-punching tests run them: `neuron tracker` in the cloud,
// the publisher on the laptop (seeding on, so a host started later behind a router that maps no port can fetch from
// it), `neuron host` in the homes, and greedy chats from any place through test/network/swarm-child.ts.
import { join } from 'node:path'
import { packModel } from '../../gguf/pack'
import { oracleGreedy, oracleModel } from '../../native/oracle'
import type { Manifest } from '../../protocol'
import { STORIES_260K } from '../models'
import type { NeuronProcess } from '../processes'
import type { HomeNetwork, Place } from '.'
import { neuronIn, swarmChildIn } from './programs'

export type Forwarding = 'client-relayed' | 'hop-to-hop'

export interface HopRow {
  hostId: string
  reached: 'direct' | 'punched' | 'relayed'
  hiddenBytesIn?: number
}

export interface HostRow {
  hostId: string
  endpoint: string | null
  relayedBytes?: number
}

export interface ChatResult {
  tokens: number[]
  route: HopRow[]
  failovers: { hostId: string }[]
  /** The client's lines about the hosts it punched a channel to, and those it could not. */
  punched: string[]
  relayed: string[]
}

export class HomeSwarm {
  readonly hostIds: Partial<Record<Place, string>> = {}
  readonly hostProcesses: Partial<Record<Place, NeuronProcess>> = {}
  private readonly processes: NeuronProcess[] = []
  trackerUrl = ''
  manifest: Manifest | undefined
  prompt: number[] = []
  /** llama.cpp's greedy tokens for `prompt`. */
  oracle: number[] = []

  constructor(
    readonly net: HomeNetwork,
    readonly dir: string,
    readonly tokens: number,
  ) {}

  /** Packs the repository's model, computes llama.cpp's tokens, starts the tracker and the publisher. */
  async start(port = 7070): Promise<void> {
    const manifest = await packModel({ source: STORIES_260K, out: join(this.dir, 'packed'), blocksPerArtifact: 2 })
    this.manifest = manifest
    const model = await oracleModel(STORIES_260K)
    this.prompt = [...model.tokenize('Once upon a time', true)]
    this.oracle = (await oracleGreedy(model, this.prompt, this.tokens, manifest.nVocab, { threads: 1 })).map(
      (s) => s.token,
    )
    await model.dispose()
    const tracker = this.neuron('cloud', [
      'tracker',
      ...['--host', '0.0.0.0', '--port', String(port), '--db', join(this.dir, 'tracker.sqlite')],
      ...['--heartbeat-ms', '500', '--new-key-grant-micro', '10000000', '--probation-probes', '1'],
    ])
    await tracker.waitFor(/tracker listening on/, 60_000)
    this.trackerUrl = `http://${this.net.addresses.cloud}:${port}`
    const publish = ['publish', join(this.dir, 'packed'), '--tracker', this.trackerUrl, '--data-dir', this.dir]
    await this.neuron('laptop', publish).waitFor(/published stories260k/, 120_000)
  }

  /** Starts `neuron host` in `place` serving `blocks` (`from:to`); resolves once it is ready, its id noted. */
  async startHost(place: Place, blocks: string): Promise<string> {
    const host = this.neuron(place, [
      ...['host', '--tracker', this.trackerUrl, '--model', this.modelId, '--blocks', blocks],
      ...['--data-dir', join(this.dir, place), '--threads', '1'],
    ])
    this.hostProcesses[place] = host
    const hostId = (await host.waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1] as string
    this.hostIds[place] = hostId
    return hostId
  }

  /** The tracker's hosts.list, asked from the laptop. */
  async hosts(): Promise<HostRow[]> {
    const child = this.track(swarmChildIn(this.net, 'laptop', ['hosts', this.trackerUrl]))
    const line = (await child.waitFor(/^\{"hosts".*$/m, 60_000))[0]
    return (JSON.parse(line) as { hosts: HostRow[] }).hosts
  }

  /** What the tracker's relay carried for the host in `place` so far, bytes. */
  async relayedBytes(place: Place): Promise<number> {
    return (await this.hosts()).find((h) => h.hostId === this.hostIds[place])?.relayedBytes ?? Number.NaN
  }

  /**
   * A greedy chat from `place`: its tokens, route and failovers, and the lines its client logged about punching.
   * `during`: acts on the chat while it runs (given the child, whose lines say its route and each token).
   */
  async chat(
    place: Place,
    forwarding: Forwarding = 'client-relayed',
    during: (child: NeuronProcess) => Promise<void> = async () => {},
  ): Promise<ChatResult> {
    const args = ['chat', this.trackerUrl, this.modelId, String(this.tokens), this.prompt.join(','), forwarding]
    const child = this.track(swarmChildIn(this.net, place, args))
    const acting = during(child)
    const line = (await child.waitFor(/^\{"done".*$/m, 180_000))[0]
    await acting
    const done = JSON.parse(line) as { done: Omit<ChatResult, 'punched' | 'relayed'> }
    const lines = child.output().split('\n')
    const named = (prefix: string) =>
      lines.flatMap((l) => (/\[client\] (.*) host ([0-9a-f]{20})/.exec(l)?.[1]?.startsWith(prefix) ? [l] : []))
    return { ...done.done, punched: named('punched a channel to'), relayed: named('no punched channel to') }
  }

  /** Whether any of `lines` names the host in `place`. */
  mentions(lines: readonly string[], place: Place): boolean {
    return lines.some((l) => l.includes(this.hostIds[place] ?? '-'))
  }

  /** Stops every process it started. */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop(2000)))
  }

  private get modelId(): string {
    if (this.manifest === undefined) throw new Error('start() the swarm first')
    return this.manifest.modelId
  }

  private neuron(place: Place, args: string[]): NeuronProcess {
    return this.track(neuronIn(this.net, place, args))
  }

  private track(p: NeuronProcess): NeuronProcess {
    this.processes.push(p)
    return p
  }
}
