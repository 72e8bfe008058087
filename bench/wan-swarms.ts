// The swarms bench:wan runs on the namespace network (test/network): each a `neuron tracker` in the cloud, a
// publisher on the laptop and `neuron host` processes with pre-seeded stores, in homes or in the cloud; chats and
// hosts.list are asked by test/network/swarm-child.ts, run where the client should sit.
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { type Manifest, splitBlocks } from '../protocol'
import { REPO_ROOT } from '../test/models'
import type { HomeName, HomeNetwork, Place } from '../test/network'
import { type NeuronProcess, watchProcess } from '../test/processes'
import { seedDataDir } from './seeded-host'

export interface SwarmPlan {
  readonly label: string
  /** The tracker's port in the cloud namespace. */
  readonly port: number
  /** Where each host runs, in route order: host i serves the i-th of as many even block ranges. */
  readonly places: readonly Place[]
  /** `neuron host --relay`: the tracker relays every frame to these hosts. */
  readonly relay: boolean
  /**
   * `neuron tracker` as a public swarm runs it (new hosts on
   * probation: probes and audits); otherwise bench/wan-tracker.ts.
   */
  readonly audits: boolean
  /**
   * With `relay`: a volunteer relay in the cloud (`neuron host --relay-for-others`, a public computer other than the
   * tracker) that the hosts reserve at, so the tracker relays nothing. It serves all of another model (this one), so it
   * carries the route's frames without being on the route.
   */
  readonly volunteerRelay?: { readonly packed: string; readonly manifest: Manifest }
}

export interface Swarm extends SwarmPlan {
  readonly trackerUrl: string
  /** The `neuron tracker` process (`ip netns exec` execs it, so this is its own pid). */
  readonly trackerPid: number
  readonly hostIds: readonly string[]
  /** The volunteer relay's host id, where the plan has one. */
  readonly relayHostId?: string
}

export interface HostRow {
  readonly hostId: string
  readonly endpoint: string | null
  readonly relayedBytes?: number
  readonly relayOffer?: {
    readonly reserved: readonly { readonly hostId: string; readonly roundTripMs: number | null }[]
  }
}

export interface ChatDone {
  readonly tokens: number[]
  readonly route: {
    hostId: string
    blocks: [number, number]
    medianMs: number
    relayHostId?: string
    /** How the client reached the hop (direct, punched, relayed). */
    reached?: string
    /** Hidden-state bytes the hop sent the client: 0 where its seam went host to host. */
    hiddenBytesIn?: number
  }[]
  readonly failovers: unknown[]
  readonly decodeTokensPerSecond: number
  /** The client's wait between consecutive tokens, ms, in order (from its token lines' clock). */
  readonly gapsMs: number[]
  /** From the route's opening to the first token, ms: the prompt's prefill through every hop, and its legs. */
  readonly prefillMs: number
  /** From the chat's start (its client connected) to the first token, ms: the route's planning and opening too. */
  readonly firstTokenMs: number
}

const CHILD = join(REPO_ROOT, 'test/network/swarm-child.ts')
/** A public volunteer's relay, roomy enough that its bounds never pace a 3-hop chat. */
const VOLUNTEER_RELAY_FLAGS = ['--relay-for-others', '--relay-circuits', '16', '--relay-mbit', '1000']

export class NamespaceSwarms {
  private readonly processes: NeuronProcess[] = []

  constructor(
    private readonly net: HomeNetwork,
    private readonly work: string,
    private readonly manifest: Manifest,
    private readonly packed: string,
  ) {}

  /** A tracker, its model published, and one host per place; resolves once every host said it is ready. */
  async start(plan: SwarmPlan): Promise<Swarm> {
    const db = join(this.work, `${plan.label}-tracker.sqlite`)
    const tracker = plan.audits
      ? this.neuronIn('cloud', [
          'tracker',
          '--host',
          '0.0.0.0',
          '--port',
          String(plan.port),
          '--db',
          db,
          '--new-key-grant-micro',
          '1000000000',
          '--grant-work-bits',
          '0',
          '--grants-per-prefix-per-day',
          '1000000',
        ])
      : this.tsxIn('cloud', join(REPO_ROOT, 'bench/wan-tracker.ts'), [String(plan.port), db], 'tracker')
    await tracker.waitFor(/tracker listening on/, 60_000)
    const trackerUrl = `http://${this.net.addresses.cloud}:${plan.port}`
    const publisher = this.neuronIn('laptop', [
      'publish',
      this.packed,
      '--tracker',
      trackerUrl,
      '--data-dir',
      join(this.work, `${plan.label}-publisher`),
    ])
    await publisher.waitFor(/published /, 120_000)
    const host = async (
      place: Place,
      name: string,
      manifest: Manifest,
      packed: string,
      [a, b]: [number, number],
      extra: string[],
    ) => {
      const dataDir = join(this.work, `${plan.label}-${name}`)
      await seedDataDir(dataDir, manifest, packed, [a, b])
      const args = [
        'host',
        '--tracker',
        trackerUrl,
        '--model',
        manifest.modelId,
        '--blocks',
        `${a}:${b}`,
        '--data-dir',
        dataDir,
        '--threads',
        '1',
      ]
      return (
        (await this.neuronIn(place, [...args, ...extra]).waitFor(/host ([0-9a-f]{20}) ready blocks/, 180_000))[1] ?? ''
      )
    }
    let relayHostId: string | undefined
    const volunteer = plan.volunteerRelay
    if (volunteer !== undefined) {
      const other = this.neuronIn('laptop', [
        'publish',
        volunteer.packed,
        '--tracker',
        trackerUrl,
        '--data-dir',
        join(this.work, `${plan.label}-publisher-2`),
      ])
      await other.waitFor(/published /, 120_000)
      // up before the route's hosts, so that they find it when they look for a relay
      relayHostId = await host(
        'cloud',
        'relay',
        volunteer.manifest,
        volunteer.packed,
        [0, volunteer.manifest.nLayer],
        VOLUNTEER_RELAY_FLAGS,
      )
      await other.stop()
    }
    const ranges = splitBlocks(this.manifest.nLayer, plan.places.length)
    const hostIds = await Promise.all(
      plan.places.map((place, i) =>
        host(place, `${i}-${place}`, this.manifest, this.packed, ranges[i] ?? [0, 0], plan.relay ? ['--relay'] : []),
      ),
    )
    await publisher.stop()
    return {
      ...plan,
      trackerUrl,
      trackerPid: tracker.child.pid ?? 0,
      hostIds,
      ...(relayHostId === undefined ? {} : { relayHostId }),
    }
  }

  /** The tracker's hosts.list rows for the swarm's hosts (or those `ids`), in route order. */
  async hosts(swarm: Swarm, ids: readonly string[] = swarm.hostIds): Promise<HostRow[]> {
    const child = this.childIn('laptop', false, ['hosts', swarm.trackerUrl])
    const rows = (JSON.parse((await child.waitFor(/^\{"hosts".*$/m, 60_000))[0]) as { hosts: HostRow[] }).hosts
    return ids.map((id) => {
      const row = rows.find((r) => r.hostId === id)
      if (row === undefined) throw new Error(`the ${swarm.label} tracker lists no host ${id}: ${JSON.stringify(rows)}`)
      return row
    })
  }

  /**
   * Polls hosts.list until every host is dialed back (direct) or every host is relayed, as the plan says, and with a
   * volunteer relay, until every host has reserved there; at most `timeoutMs`.
   */
  async untilReachedAsPlanned(swarm: Swarm, timeoutMs = 90_000): Promise<HostRow[]> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const all = await this.hosts(
        swarm,
        swarm.relayHostId === undefined ? swarm.hostIds : [...swarm.hostIds, swarm.relayHostId],
      )
      const rows = all.slice(0, swarm.hostIds.length)
      const reserved = all[swarm.hostIds.length]?.relayOffer?.reserved ?? []
      const atRelay = swarm.relayHostId === undefined || rows.every((r) => reserved.some((x) => x.hostId === r.hostId))
      if (atRelay && rows.every((r) => (r.endpoint === null) === swarm.relay)) return rows
      if (Date.now() > deadline) {
        const want = swarm.relayHostId === undefined ? '' : ' and reserved at the volunteer relay'
        throw new Error(
          `the ${swarm.label} swarm's hosts are not ${swarm.relay ? 'all relayed' : 'all direct'}${want} after ` +
            `${timeoutMs} ms: ${JSON.stringify({ rows, reserved })}`,
        )
      }
      await new Promise((r) => setTimeout(r, 1000))
    }
  }

  /** A greedy chat of `tokens` tokens from `place`, its hidden states carried by the client or forwarded hop to hop. */
  async chat(
    swarm: Swarm,
    place: Place,
    tokens: number,
    prompt: readonly number[],
    /** default: none asked, as an app's or the API's chat runs ('auto'). */
    forwarding: 'client-relayed' | 'hop-to-hop' | 'default' = 'client-relayed',
    /** Whether the client punches channels to hosts that accept no connections (else their relay carries them). */
    punch = false,
  ): Promise<ChatDone> {
    const child = this.childIn(place, punch, [
      'chat',
      swarm.trackerUrl,
      this.manifest.modelId,
      String(tokens),
      prompt.join(','),
      forwarding,
    ])
    const done = (JSON.parse((await child.waitFor(/^\{"done".*$/m, 300_000))[0]) as { done: Omit<ChatDone, 'gapsMs'> })
      .done
    const atMs = [...child.output().matchAll(/^\{"token".*"atMs":(\d+)\}$/gm)].map((t) => Number(t[1]))
    const routedAtMs = Number(child.output().match(/^\{"route".*"atMs":(\d+)\}$/m)?.[1] ?? Number.NaN)
    if (done.route.length !== swarm.hostIds.length)
      throw new Error(`the ${swarm.label} chat took a route of ${done.route.length} hops: ${JSON.stringify(done)}`)
    if (swarm.relayHostId !== undefined && done.route.some((h) => h.relayHostId !== swarm.relayHostId))
      throw new Error(
        `the ${swarm.label} chat went around its volunteer relay ${swarm.relayHostId}: ${JSON.stringify(done.route)}`,
      )
    const firstTokenMs = atMs[0] ?? Number.NaN
    return {
      ...done,
      gapsMs: atMs.slice(1).map((t, i) => t - (atMs[i] ?? 0)),
      prefillMs: firstTokenMs - routedAtMs,
      firstTokenMs,
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop(2000)))
  }

  /** Any program in `place`, stopped with the swarms (`name` says which in errors). */
  programIn(place: Place, command: string, args: string[], name: string, env?: NodeJS.ProcessEnv): NeuronProcess {
    const child = this.net.spawnIn(place, command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env === undefined ? {} : { env }),
    })
    return this.watch(child, `${name} in ${place}`)
  }

  private neuronIn(place: Place, args: string[]): NeuronProcess {
    const child = this.net.spawnIn(place, process.execPath, [join(REPO_ROOT, 'bin/neuron.js'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    return this.watch(child, `neuron ${args[0]} in ${place}`)
  }

  private childIn(place: Place, punch: boolean, args: string[]): NeuronProcess {
    return this.tsxIn(place, CHILD, args, `swarm client (${args[0]})`, { NEURON_PUNCH: punch ? '1' : '0' })
  }

  private tsxIn(place: Place, script: string, args: string[], name: string, env?: NodeJS.ProcessEnv): NeuronProcess {
    const child = this.net.spawnIn(place, process.execPath, ['--import', 'tsx', script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
    })
    return this.watch(child, `${name} in ${place}`)
  }

  private watch(child: ReturnType<HomeNetwork['spawnIn']>, name: string): NeuronProcess {
    const p = watchProcess(child, name)
    this.processes.push(p)
    child.once('exit', () => this.processes.splice(this.processes.indexOf(p), 1))
    return p
  }
}

/**
 * The fraction of a chat's seams forwarded host to host: those whose hop sent the client at most the first step's
 * hidden states (f16 rows of the prompt), as the default mode carries its first step through the client when a far
 * hop's second ping is still out as the prompt goes (client/generation/far-legs.ts farLegsSettled).
 */
export function seamsForwarded(done: ChatDone, promptTokens: number, nEmbd: number): number {
  const seams = done.route.slice(0, -1)
  const firstStep = promptTokens * nEmbd * 2
  return (
    seams.filter((h) => (h.hiddenBytesIn ?? Number.POSITIVE_INFINITY) <= firstStep).length / Math.max(1, seams.length)
  )
}

/**
 * A bench's teardown of its namespace network, its swarms and its work directory: once, whoever asks first (SIGINT or
 * the end); a second caller waits on the same teardown, not on a no-op. `parts` reads them when it runs.
 */
export function namespaceTeardown(
  bench: string,
  work: string,
  parts: () => { net?: HomeNetwork; swarms?: NamespaceSwarms },
): () => Promise<void> {
  let tornDown: Promise<void> | undefined
  const teardown = () => {
    tornDown ??= (async () => {
      const { net, swarms } = parts()
      await swarms?.close()
      await net?.close()
      await rm(work, { recursive: true, force: true })
    })()
    return tornDown
  }
  process.once('SIGINT', () => {
    console.error(`${bench} interrupted: tearing the network down`)
    void teardown().finally(() => process.exit(130))
  })
  return teardown
}

/**
 * A router's "DMZ host" setting: every connection from the internet to its WAN ports 1024-65535 goes to the home's
 * first computer. A host there is then dialed back at its listening port, as one behind a manual port forward is.
 */
export async function openDmz(net: HomeNetwork, home: HomeName): Promise<void> {
  const plan = net.homes[home]
  const computer = plan.computers[0]
  if (computer === undefined) throw new Error(`home ${home} has no computer to forward to`)
  const rule = (table: string, chain: string, ...rest: string[]) =>
    net.exec(plan.router, ['nft', 'add', 'rule', 'inet', table, chain, 'iifname', 'wan', ...rest])
  await rule('nat', 'prerouting', 'tcp', 'dport', '1024-65535', 'dnat', 'ip', 'to', computer.address)
  await rule('filter', 'forward', 'ct', 'status', 'dnat', 'accept')
}

// One process, `n` TCP connects one after another, each timed to its SYN-ACK or RST (a closed port answers at once).
const RTT_PROBE = `const [host, port, n] = process.argv.slice(1)
const one = () => new Promise((resolve) => {
  const start = performance.now(); let done = false
  const s = require('node:net').connect({ host, port: Number(port) })
  const end = (ms) => { if (done) return; done = true; s.destroy(); resolve(ms) }
  s.once('connect', () => end(performance.now() - start)); s.once('error', () => end(performance.now() - start))
  setTimeout(() => end(-1), 3000)
})
;(async () => {
  const ms = []
  for (let i = 0; i < Number(n); i++) ms.push(await one())
  console.log(JSON.stringify(ms))
})()`

/**
 * Round trips from `place` to `address`, ms, by TCP connects to port 9
 * (closed: the kernel's RST is the answer); -1 for one unanswered in 3 s.
 */
export async function roundTrips(net: HomeNetwork, place: Place, address: string, n = 5): Promise<number[]> {
  return JSON.parse(await net.exec(place, [process.execPath, '-e', RTT_PROBE, address, '9', String(n)])) as number[]
}

/**
 * CPU time a process has used so far, user and system, ms (from
 * /proc; a tick is 10 ms on Linux's usual USER_HZ of 100).
 */
export function cpuMs(pid: number): number {
  // the fields after the command's closing parenthesis: state is field 3, utime 14, stime 15
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
