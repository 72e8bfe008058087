// Runs inside a network namespace of its own (see latency-routing.test.ts): a tracker and two hosts serving the
// whole model on 127.0.0.1, one link slowed by 80 ms each way (tc netem where the kernel has it, else a delay
// proxy in front of every host), and a client running short sessions. Prints one JSON line: which way the delay
// was made and the host each session was routed to. Loopback only.
// Usage: node --import tsx test/latency-swarm-child.ts SCRATCH_DIR MODEL.gguf
import { execFileSync } from 'node:child_process'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { DelayProxy } from './delay-proxy'
import { Host, startSwarm } from './programs'

const DELAY_MS = 80
const [dir = '', model = ''] = process.argv.slice(2)

function tc(...args: string[]): void {
  execFileSync('tc', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** Sets up a prio qdisc whose third band adds DELAY_MS, or says why the kernel cannot. */
function netem(): { ok: true } | { ok: false; why: string } {
  try {
    tc('qdisc', 'add', 'dev', 'lo', 'root', 'handle', '1:', 'prio')
    tc('qdisc', 'add', 'dev', 'lo', 'parent', '1:3', 'handle', '30:', 'netem', 'delay', `${DELAY_MS}ms`)
    return { ok: true }
  } catch (error) {
    const why = ((error as { stderr?: Buffer }).stderr?.toString() ?? String(error)).trim()
    try {
      tc('qdisc', 'del', 'dev', 'lo', 'root')
    } catch {}
    return { ok: false, why: why === '' ? 'tc failed' : why }
  }
}

const portOf = (url: string) => Number(new URL(url).port)
const kernel = netem()
const mode = kernel.ok ? 'netem' : 'proxy'
const proxies = new Map<string, DelayProxy>()

const swarm = await startSwarm(dir, model, [], {
  latency: { refreshMs: 200, samplesPerLink: 8 },
  // Probes time their steps over the tracker's link to the host: none while a link is slowed, none audited.
  checks: {
    probationProbes: 1,
    probationProbeEveryMs: 3_600_000,
    probeEveryMs: 3_600_000,
    auditRate: 0,
    probationAuditRate: 0,
  },
})
const nLayer = swarm.manifest.nLayer
const hosts: Host[] = []
for (let i = 0; i < 2; i++) {
  hosts.push(
    await swarm.addHost([0, nLayer], (options) =>
      kernel.ok
        ? new Host(options)
        : new Host({
            ...options,
            advertise: async (listening) => {
              const proxy = await DelayProxy.start(portOf(listening))
              proxies.set(`${i}`, proxy)
              const url = new URL(listening)
              url.port = String(proxy.port)
              return url.toString()
            },
          }),
    ),
  )
}
const ids = hosts.map((h) => h.hostId as string)
const endpointOf = (id: string) => swarm.tracker.registry.get(id)?.state.endpoint ?? ''
for (let i = 0; i < 600 && !ids.every((id) => swarm.tracker.checks.eligible(id)); i++)
  await new Promise((r) => setTimeout(r, 100))

/** Slows the link of host `index` (or none): netem filters on its port, else its proxy's delay. */
function slow(index: number | null): void {
  if (kernel.ok) {
    try {
      tc('filter', 'del', 'dev', 'lo', 'parent', '1:')
    } catch {}
    if (index === null) return
    const port = String(portOf(endpointOf(ids[index] as string)))
    for (const dir of ['sport', 'dport'])
      tc(
        'filter',
        'add',
        'dev',
        'lo',
        'parent',
        '1:',
        'protocol',
        'ip',
        'prio',
        '1',
        'u32',
        'match',
        'ip',
        dir,
        port,
        '0xffff',
        'flowid',
        '1:3',
      )
  } else for (const [i, proxy] of proxies) proxy.delayMs = Number(i) === index ? DELAY_MS : 0
}

// The host routes prefer while nothing is measured is the one slowed first: avoiding it is then the latency's doing.
const preferred = swarm.tracker.planner.route({ modelId: swarm.manifest.modelId, maxTokens: 64, exclude: [] }).hops[0]
  ?.hostId as string
const slowFirst = ids.indexOf(preferred)
const identity = NodeIdentity.generate()
const client = await SwarmClient.connect(swarm.tracker.url, identity)
/** The round trips, ms, the tracker routes this client by (printed for the reader, never asserted). */
const measured = () => Object.fromEntries(ids.map((id) => [id, swarm.tracker.latencies.roundTrip(identity.id, id)]))

async function session(): Promise<string> {
  let routed = ''
  const run = client.generate({
    modelId: swarm.manifest.modelId,
    prompt: 'Once upon a time',
    maxTokens: 4,
    stopAtEog: false,
    onRoute: (hops) => (routed = hops.map((h) => h.hostId).join(',')),
  })
  for (let next = await run.next(); !next.done; next = await run.next()) {}
  // the report is on its way; past refreshMs, the other host is measured again
  await new Promise((r) => setTimeout(r, 250))
  return routed
}

/** Runs sessions until the last `streak` went to `target`, at most `max` sessions; returns every session's route. */
async function until(target: string, streak: number, max: number): Promise<string[]> {
  const routes: string[] = []
  while (routes.length < max && !(routes.length >= streak && routes.slice(-streak).every((r) => r === target)))
    routes.push(await session())
  return routes
}

const slowHost = ids[slowFirst] as string
const otherHost = ids[1 - slowFirst] as string
slow(slowFirst)
const whileSlow = await until(otherHost, 3, 10)
const measuredWhileSlow = measured()
// The delay leaves the first host (and slows the other, so the choice is not left to sub-millisecond compute noise).
slow(1 - slowFirst)
const recovered = await until(slowHost, 3, 16)
const measuredRecovered = measured()
slow(null)
await client.close()
for (const p of proxies.values()) await p.close()
await swarm.close()
const why = kernel.ok ? 'the kernel has netem' : kernel.why
const summary = { mode, why, slowHost, otherHost, whileSlow, recovered, measuredWhileSlow, measuredRecovered }
process.stdout.write(`${JSON.stringify(summary)}\n`)
process.exit(0)
