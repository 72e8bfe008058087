// npm run bench:tracker-scale [-- --hosts 10000 --rounds 3] — the tracker under a swarm's load, on one
// instance and on two: simulated hosts (real authenticated Socket.IO connections, heartbeating at the
// tracker's real interval; bench/tracker-scale-fleet.ts, its own process), clients asking for routes,
// and clients handing in signed receipts for the sessions they were routed. Three set-ups, each
// tracker a real `neuron tracker` process: SQLite alone, PostgreSQL alone, and two instances on one
// PostgreSQL database joined by Redis (the baseline of that one is PostgreSQL alone, measured in
// the same run). Rounds alternate the set-ups; every round is printed with the load average; the
// last JSON line holds the medians and the ratios.
import { fork } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { connectTracker, type TrackerSocket } from '../dataplane/tracker-connection'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { createModelTorrent } from '../host/artifacts/model-torrent'
import { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  MAX_RECEIPTS,
  type Manifest,
  type Receipt,
  type ReceiptBody,
  type RouteHop,
  receiptMessage,
} from '../protocol'
import { STORIES_260K } from '../test/models'
import { startPostgres } from '../test/postgres'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { startRedis } from '../test/redis'
import { type PricingOptions, priceOf, pricingFromEnv } from '../tracker/ledger/pricing'
import { BENCH_DIR } from './models'
import type { FleetAnswer, FleetCommand } from './tracker-scale-fleet'

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name)
  const n = i === -1 ? fallback : Number(process.argv[i + 1])
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number`)
  return n
}
const HOSTS = flag('--hosts', 10_000)
const ROUNDS = flag('--rounds', 3)
/** Clients asking for routes at once, each one plan after another. */
const PLAN_CLIENTS = 8
/** How long heartbeats and plans are measured per round: three heartbeat intervals. */
const WINDOW_MS = 15_000
/** Sessions whose receipts are handed in per round, and decode steps per session. */
const RECEIPT_SESSIONS = 48
const STEPS = 16
const PROMPT = 8

interface Setup {
  readonly name: 'sqlite-1' | 'postgres-1' | 'postgres-2'
  readonly urls: string[]
  readonly trackers: NeuronProcess[]
  readonly clients: TrackerSocket[]
}

interface Round {
  readonly round: number
  readonly setup: string
  readonly hosts_online: number
  readonly join_s: number
  readonly heartbeats_per_s: number
  readonly heartbeats_failed: number
  readonly heartbeat_p50_ms: number
  readonly heartbeat_p99_ms: number
  readonly plans: number
  readonly plans_failed: number
  readonly plans_per_s: number
  readonly plan_p50_ms: number
  readonly plan_p99_ms: number
  readonly receipts_settled: number
  readonly receipts_refused: number
  readonly receipts_per_s: number
  readonly load_average: number
}

const quantile = (xs: readonly number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0
}
const median = (xs: readonly number[]) => quantile(xs, 0.5)
const sha = (s: string) => createHash('sha256').update(s).digest('hex')
const round2 = (n: number) => Math.round(n * 100) / 100

const work = await mkdtemp(join(await mkdir(BENCH_DIR, { recursive: true }).then(() => BENCH_DIR), 'tracker-scale-'))
const [pg, redis] = await Promise.all([startPostgres(), startRedis()])
const manifest: Manifest = await packModel({ source: STORIES_260K, out: join(work, 'packed'), blocksPerArtifact: 1 })
const pricing: PricingOptions = pricingFromEnv(process.env)
const price = priceOf(manifest, pricing)
console.log(
  `bench:tracker-scale: ${HOSTS} hosts, ${ROUNDS} rounds, ${PLAN_CLIENTS} planning clients, windows of ` +
    `${WINDOW_MS / 1000} s, ${RECEIPT_SESSIONS} sessions × ${STEPS + 1} steps of receipts per round`,
)

const hostKeys = Array.from({ length: HOSTS }, () => NodeIdentity.generate())
const keyOf = new Map(hostKeys.map((k) => [k.id, k]))
const pems = hostKeys.map((k) => k.exportPrivatePem())

const fleet = fork(join(import.meta.dirname, 'tracker-scale-fleet.ts'), [], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
})
const ask = (command: FleetCommand) =>
  new Promise<FleetAnswer>((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`the fleet process exited (${code})`))
    fleet.once('message', (m) => {
      fleet.off('exit', exited)
      resolve(m as FleetAnswer)
    })
    fleet.once('exit', exited)
    fleet.send(command)
  })

async function startSetup(name: Setup['name']): Promise<Setup> {
  const key = join(work, `${name}.key.pem`)
  const db = name === 'sqlite-1' ? join(work, 'tracker.sqlite') : await pg.createDatabase()
  const instances = name === 'postgres-2' ? 2 : 1
  const trackers: NeuronProcess[] = []
  const urls: string[] = []
  for (let i = 0; i < instances; i++) {
    const args = [
      'tracker',
      '--port',
      '0',
      '--db',
      db,
      '--key-file',
      key,
      '--new-key-grant-micro',
      '1000000000000',
      '--new-accounts-per-minute',
      '1000',
      '--grant-work-bits',
      '0',
      '--grants-per-prefix-per-day',
      '1000000',
    ]
    const t = startNeuron(instances > 1 ? [...args, '--redis', redis.url] : args)
    trackers.push(t)
    urls.push((await t.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string)
  }
  // The model, published once at the first instance (the others read it from the database).
  const publisher = await connectTracker(urls[0] as string, '/clients', NodeIdentity.generate())
  const torrent = await createModelTorrent(join(work, 'packed'), manifest, [`${urls[0]}/announce`])
  await callRpc(publisher, ClientToTracker, 'model.publish', {
    manifest,
    torrent,
    tokenizer: await tokenizerGguf(join(work, 'packed', 'head.gguf')),
  })
  publisher.close()
  const clients = await Promise.all(
    Array.from({ length: PLAN_CLIENTS }, (_, i) =>
      connectTracker(urls[i % urls.length] as string, '/clients', NodeIdentity.generate()),
    ),
  )
  return { name, urls, trackers, clients }
}

/** Hosts online as the first instance counts them (the mirror, on two). */
async function online(url: string): Promise<number> {
  const res = await fetch(`${url}/health`)
  return ((await res.json()) as { hosts: number }).hosts
}

interface Planned {
  readonly client: TrackerSocket
  readonly session: string
  readonly hops: readonly RouteHop[]
}

async function planLoad(
  setup: Setup,
  until: number,
): Promise<{ latencies: number[]; failed: number; planned: Planned[] }> {
  const latencies: number[] = []
  const planned: Planned[] = []
  let failed = 0
  await Promise.all(
    setup.clients.map(async (client) => {
      // Bounded: at most 100 000 plans per client, and the window.
      for (let i = 0; i < 100_000 && Date.now() < until; i++) {
        const session = randomBytes(16).toString('hex')
        const t0 = performance.now()
        try {
          const route = await callRpc(
            client,
            ClientToTracker,
            'route.plan',
            { modelId: manifest.modelId, maxTokens: PROMPT + STEPS, promptTokens: PROMPT, session, exclude: [] },
            60_000,
          )
          latencies.push(performance.now() - t0)
          planned.push({ client, session, hops: route.hops })
        } catch {
          failed++
        }
      }
    }),
  )
  return { latencies, failed, planned }
}

/**
 * Every hop's signed receipt for every step of the session, the seams joined (each hop takes what the one before gave).
 */
function receiptsOf(p: Planned, trackerKey: string): Receipt[] {
  const out: Receipt[] = []
  for (let step = 1; step <= STEPS + 1; step++) {
    for (const [h, hop] of p.hops.entries()) {
      const body: ReceiptBody = {
        session: p.session,
        step,
        hostId: hop.hostId,
        blocks: [hop.blocks[0], hop.blocks[1]],
        tokens: step === 1 ? PROMPT : 1,
        position: step === 1 ? 0 : PROMPT + step - 2,
        modelId: manifest.modelId,
        price,
        tracker: trackerKey,
        input: sha(`${p.session}:${step}:${h}`),
        output: sha(`${p.session}:${step}:${h + 1}`),
      }
      const key = keyOf.get(hop.hostId)
      if (key === undefined) throw new Error(`host ${hop.hostId} is not one of the fleet's`)
      out.push({ ...body, signature: key.sign(receiptMessage(body)) })
    }
  }
  return out
}

async function receiptLoad(
  planned: readonly Planned[],
): Promise<{ settled: number; refused: number; seconds: number }> {
  const sessions = planned.slice(0, RECEIPT_SESSIONS)
  const batches = sessions.map((p) => ({ p, receipts: receiptsOf(p, p.client.trackerKey) }))
  let settled = 0
  let refused = 0
  const t0 = performance.now()
  // One submitter per client, each handing in its sessions in turn, as apps do after each generation.
  await Promise.all(
    [...new Set(sessions.map((s) => s.client))].map(async (client) => {
      for (const { p, receipts } of batches.filter((b) => b.p.client === client)) {
        for (let i = 0; i < receipts.length; i += MAX_RECEIPTS) {
          const { verdicts } = await callRpc(
            client,
            ClientToTracker,
            'receipts.submit',
            { session: p.session, receipts: receipts.slice(i, i + MAX_RECEIPTS) },
            120_000,
          )
          for (const v of verdicts) v.ok ? settled++ : refused++
        }
      }
    }),
  )
  return { settled, refused, seconds: (performance.now() - t0) / 1000 }
}

async function runRound(round: number, setup: Setup): Promise<Round> {
  const joined = await ask({
    kind: 'connect',
    urls: setup.urls,
    keys: pems,
    modelId: manifest.modelId,
    nLayer: manifest.nLayer,
  })
  if (joined.kind !== 'connected') throw new Error('the fleet did not connect')
  if (joined.failed > 0) console.error(`${setup.name}: ${joined.failed} hosts could not join (${joined.firstError})`)
  for (let waited = 0; waited < 60_000 && (await online(setup.urls[0] as string)) < joined.hosts; waited += 500)
    await new Promise((r) => setTimeout(r, 500))
  const hostsOnline = await online(setup.urls[0] as string)
  const until = Date.now() + WINDOW_MS
  const [beats, plans] = await Promise.all([ask({ kind: 'measure', windowMs: WINDOW_MS }), planLoad(setup, until)])
  if (beats.kind !== 'measured') throw new Error('the fleet did not measure')
  const receipts = await receiptLoad(plans.planned)
  await ask({ kind: 'disconnect' })
  // Let the trackers take the hosts offline before the next set-up is measured.
  for (let waited = 0; waited < 30_000 && (await online(setup.urls[0] as string)) > 0; waited += 500)
    await new Promise((r) => setTimeout(r, 500))
  return {
    round,
    setup: setup.name,
    hosts_online: hostsOnline,
    join_s: round2(joined.ms / 1000),
    heartbeats_per_s: round2(beats.acked / (beats.windowMs / 1000)),
    heartbeats_failed: beats.failed,
    heartbeat_p50_ms: round2(beats.p50Ms),
    heartbeat_p99_ms: round2(beats.p99Ms),
    plans: plans.latencies.length,
    plans_failed: plans.failed,
    plans_per_s: round2(plans.latencies.length / (WINDOW_MS / 1000)),
    plan_p50_ms: round2(quantile(plans.latencies, 0.5)),
    plan_p99_ms: round2(quantile(plans.latencies, 0.99)),
    receipts_settled: receipts.settled,
    receipts_refused: receipts.refused,
    receipts_per_s: round2(receipts.settled / receipts.seconds),
    load_average: round2(loadavg()[0] ?? 0),
  }
}

const setups: Setup[] = []
try {
  for (const name of ['sqlite-1', 'postgres-1', 'postgres-2'] as const) setups.push(await startSetup(name))
  const rounds: Round[] = []
  for (let r = 1; r <= ROUNDS; r++) {
    for (const setup of setups) {
      const result = await runRound(r, setup)
      rounds.push(result)
      console.log(JSON.stringify(result))
    }
  }
  const med = (name: string, key: keyof Round) =>
    median(rounds.filter((r) => r.setup === name).map((r) => r[key] as number))
  const keys = [
    'heartbeats_per_s',
    'heartbeat_p99_ms',
    'plans_per_s',
    'plan_p50_ms',
    'plan_p99_ms',
    'receipts_per_s',
  ] as const
  const medians = Object.fromEntries(
    setups.map((s) => [s.name, Object.fromEntries(keys.map((k) => [k, med(s.name, k)]))]),
  )
  const ratio = (a: string, b: string) =>
    Object.fromEntries(keys.map((k) => [k, round2(med(a, k) / Math.max(1e-9, med(b, k)))]))
  for (const s of setups) console.log(`${s.name}: ${keys.map((k) => `${k} ${med(s.name, k)}`).join(', ')}`)
  console.log(
    JSON.stringify({
      bench: 'tracker-scale',
      hosts: HOSTS,
      rounds: ROUNDS,
      load_average: round2(loadavg()[0] ?? 0),
      medians,
      two_instances_vs_one: ratio('postgres-2', 'postgres-1'),
      postgres_vs_sqlite: ratio('postgres-1', 'sqlite-1'),
    }),
  )
} finally {
  fleet.kill()
  for (const s of setups) {
    for (const c of s.clients) c.close()
    await Promise.all(s.trackers.map((t) => t.stop(5_000)))
  }
  await Promise.all([pg.stop(), redis.stop()])
  await rm(work, { recursive: true, force: true })
}
