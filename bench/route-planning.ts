// npm run bench:route-planning — route and placement planning on a simulated swarm of 10 000 hosts
// serving an 80-block model. Prints one JSON line per phase; the last line holds p50/p99 in ms.
import { loadavg } from 'node:os'
import { Sfc32 } from '../gguf/random'
import { NeuronError } from '../protocol'
import { previewPlacement } from '../tracker/placement/placement'
import { DEFAULT_ROUTE_COSTS, hopComputeMs } from '../tracker/routing/costs'
import { RoutePlanner, type RouteRequest } from '../tracker/routing/route-planner'
import { LatencyMatrix, type ServedSpan, type ServingStatus, type SwarmView } from '../tracker/routing/swarm-view'

const HOSTS = 10_000
const BLOCKS = 80
const ROUTES = 2_000
const PLACEMENTS = 200
const CLIENTS = 200
const PEERS_MEASURED = 8
/** The baseline, which tries every pair of hosts at every boundary, runs on a sub-swarm this big. */
const BASELINE_HOSTS = 1_000
const BASELINE_ROUTES = 10
const SEED = 20261130

const rng = new Sfc32(SEED, 1)
const uniform = () => rng.next() / 4294967296
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(uniform() * xs.length)] as T

// Hosts sit in five regions; a measured latency is 2 ms plus the distance, in ms.
const regions = [
  [0, 0],
  [30, 10],
  [90, 40],
  [140, 0],
  [60, 120],
] as const
const place = () => {
  const [x, y] = pick(regions)
  return [x + uniform() * 20, y + uniform() * 20] as const
}
const where = new Map<string, readonly [number, number]>()
const distance = (a: string, b: string) => {
  const [ax, ay] = where.get(a) ?? [0, 0]
  const [bx, by] = where.get(b) ?? [0, 0]
  return 2 + Math.hypot(ax - bx, ay - by)
}

const statuses: ServingStatus[] = [
  ...Array(90).fill('ready'),
  ...Array(4).fill('loading'),
  ...Array(3).fill('downloading'),
  ...Array(3).fill('draining'),
]
const spans: ServedSpan[] = []
for (let i = 0; i < HOSTS; i++) {
  const hostId = `host-${i.toString().padStart(5, '0')}`
  where.set(hostId, place())
  const length = 4 + Math.floor(uniform() * 21)
  const begin = Math.floor(uniform() * (BLOCKS - 1))
  const maxSessions = 4 + Math.floor(uniform() * 13)
  spans.push({
    hostId,
    blocks: [begin, Math.min(BLOCKS, begin + length)],
    // Log-uniform from 2 ms (a GPU) to 60 ms (an old CPU) per block.
    msPerBlock: 2 * 30 ** uniform(),
    relay: uniform() < 0.15,
    activeSessions: Math.floor(uniform() * (maxSessions + 1)),
    maxSessions,
    kvFreeTokens: Math.floor(uniform() * 16_384),
    reputation: uniform() < 0.05 ? uniform() * 0.5 : 0.5 + uniform() * 0.5,
    status: pick(statuses),
  })
}
const latency = new LatencyMatrix()
for (const span of spans) {
  for (let k = 0; k < PEERS_MEASURED; k++) {
    const peer = pick(spans).hostId
    if (peer !== span.hostId) latency.setBoth(span.hostId, peer, distance(span.hostId, peer))
  }
}
const clients: string[] = []
for (let c = 0; c < CLIENTS; c++) {
  const id = `client-${c}`
  where.set(id, place())
  clients.push(id)
  for (let k = 0; k < 30; k++) {
    const peer = pick(spans).hostId
    latency.setBoth(id, peer, distance(id, peer))
  }
}
const view: SwarmView = { nBlocks: BLOCKS, spans, latency }

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN
}

function timed<T>(fn: () => T): [T, number] {
  const started = performance.now()
  const result = fn()
  return [result, performance.now() - started]
}

const buildMs: number[] = []
let planner: RoutePlanner | undefined
// The first builds warm the JIT and are not counted.
for (let run = 0; run < 8; run++) {
  const [built, ms] = timed(() => new RoutePlanner(view))
  planner = built
  if (run >= 3) buildMs.push(ms)
}
if (planner === undefined) throw new Error('unreachable: the loop above builds a planner')
console.log(
  JSON.stringify({
    phase: 'build',
    hosts: HOSTS,
    blocks: BLOCKS,
    runs: buildMs.length,
    p50_ms: percentile(buildMs, 50),
    max_ms: Math.max(...buildMs),
  }),
)

// Nine in ten requests are whole routes from a client; one in ten replaces a span after a hop failed.
const requests: RouteRequest[] = []
for (let r = 0; r < ROUTES; r++) {
  const tokens = 512 + Math.floor(uniform() * 7680)
  if (r % 10 === 9) {
    const begin = Math.floor(uniform() * (BLOCKS - 8))
    const end = begin + 1 + Math.floor(uniform() * 8)
    requests.push({
      tokens,
      span: [begin, end],
      previousHop: pick(spans).hostId,
      nextHop: pick(spans).hostId,
      exclude: new Set([pick(spans).hostId]),
    })
  } else {
    const client = pick(clients)
    requests.push({ tokens, previousHop: client, nextHop: client })
  }
}
// Warm the JIT on a few requests before measuring, as a long-running tracker would be.
for (const request of requests.slice(0, 50)) planner.plan(request)

const planMs: number[] = []
let hops = 0
let planned = 0
let noRoute = 0
let routeMs = 0
for (const request of requests) {
  const [route, ms] = timed(() => {
    try {
      return planner.plan(request)
    } catch (error) {
      if (error instanceof NeuronError && error.code === 'no_route') return undefined
      throw error
    }
  })
  planMs.push(ms)
  if (route === undefined) {
    noRoute++
    continue
  }
  planned++
  hops += route.hops.length
  routeMs += route.expectedMsPerToken
}
console.log(
  JSON.stringify({
    phase: 'plan',
    routes: requests.length,
    planned,
    no_route: noRoute,
    mean_hops: hops / planned,
    mean_expected_ms_per_token: routeMs / planned,
    p50_ms: percentile(planMs, 50),
    p99_ms: percentile(planMs, 99),
    max_ms: Math.max(...planMs),
  }),
)

// A tracker that rebuilds per request pays the build too.
const oneShotMs: number[] = []
for (const request of requests.slice(0, 50)) {
  const [, ms] = timed(() => new RoutePlanner(view).plan(request))
  oneShotMs.push(ms)
}
console.log(
  JSON.stringify({
    phase: 'build+plan',
    routes: oneShotMs.length,
    p50_ms: percentile(oneShotMs, 50),
    p99_ms: percentile(oneShotMs, 99),
  }),
)

// Baseline: the same cost model searched the plain way, every arrival tried for every hop entry at every
// boundary (O(hosts² × blocks)), on a sub-swarm small enough to finish. Same time per token = same optimum.
function baselineMsPerToken(sub: SwarmView, tokens: number, client: string): number {
  const { defaultLatencyMs, relayPenaltyMs } = DEFAULT_ROUTE_COSTS
  const hosts = sub.spans.filter(
    (s) => s.status === 'ready' && s.activeSessions < s.maxSessions && s.kvFreeTokens >= tokens,
  )
  const link = (from: string, to: string) => sub.latency.ms(from, to) ?? defaultLatencyMs
  let arrivals: { id: string; ms: number }[] = [{ id: client, ms: 0 }]
  const cur = new Map<ServedSpan, number>()
  for (let b = 0; b < sub.nBlocks; b++) {
    const next: { id: string; ms: number }[] = []
    for (const s of hosts) {
      if (s.blocks[0] > b || s.blocks[1] <= b) continue
      let best = cur.get(s) ?? Number.POSITIVE_INFINITY
      for (const a of arrivals)
        if (a.id !== s.hostId) best = Math.min(best, a.ms + link(a.id, s.hostId) + (s.relay ? relayPenaltyMs : 0))
      const ms = best + hopComputeMs(s, 1)
      cur.set(s, ms)
      if (ms < Number.POSITIVE_INFINITY) next.push({ id: s.hostId, ms })
    }
    arrivals = next
  }
  return Math.min(...arrivals.map((a) => a.ms + link(a.id, client)))
}
// Low reputation adds a search-only penalty the reported time leaves out, so the sub-swarm has none.
const sub: SwarmView = {
  nBlocks: BLOCKS,
  spans: spans.slice(0, BASELINE_HOSTS).map((s) => ({ ...s, reputation: 0.9 })),
  latency,
}
const subPlanner = new RoutePlanner(sub)
const baselineMs: number[] = []
const plannerMs: number[] = []
let agree = 0
let compared = 0
for (let r = 0; r < BASELINE_ROUTES; r++) {
  const client = pick(clients)
  const request = { tokens: 1024, previousHop: client, nextHop: client }
  const [baseline, ms] = timed(() => baselineMsPerToken(sub, request.tokens, client))
  baselineMs.push(ms)
  const [route, planOnceMs] = timed(() => {
    try {
      return subPlanner.plan(request)
    } catch {
      return undefined
    }
  })
  plannerMs.push(planOnceMs)
  if (route === undefined && baseline === Number.POSITIVE_INFINITY) continue
  compared++
  if (route !== undefined && Math.abs(route.expectedMsPerToken - baseline) <= 1e-9 * baseline) agree++
}
console.log(
  JSON.stringify({
    phase: 'baseline',
    hosts: BASELINE_HOSTS,
    routes: BASELINE_ROUTES,
    same_time_per_token: `${agree}/${compared}`,
    baseline_p50_ms: percentile(baselineMs, 50),
    planner_p50_ms: percentile(plannerMs, 50),
    speedup: percentile(baselineMs, 50) / percentile(plannerMs, 50),
  }),
)

const model = { nLayer: BLOCKS, nEmbd: 8192, bytesPerBlock: Array(BLOCKS).fill(880e6), kvBytesPerTokenPerBlock: 4096 }
const placementMs: number[] = []
const outcomes: Record<string, number> = {}
let placedBlocks = 0
for (let p = 0; p < PLACEMENTS; p++) {
  const joining = {
    freeMemoryBytes: 4e9 + uniform() * 40e9,
    freeDiskBytes: 20e9 + uniform() * 80e9,
    msPerBlock: 2 * 30 ** uniform(),
    relay: uniform() < 0.15,
  }
  const [preview, ms] = timed(() => previewPlacement(view, model, joining, { kvBudgetTokens: 8192 }))
  placementMs.push(ms)
  const outcome = preview.decision.serve ? 'serve' : preview.decision.code
  outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
  if (preview.decision.serve) placedBlocks += preview.decision.proposal.blocks[1] - preview.decision.proposal.blocks[0]
}
console.log(
  JSON.stringify({
    phase: 'placement',
    placements: PLACEMENTS,
    outcomes,
    mean_blocks: placedBlocks / (outcomes.serve ?? 1),
    p50_ms: percentile(placementMs, 50),
    p99_ms: percentile(placementMs, 99),
  }),
)

console.log(
  JSON.stringify({
    bench: 'route-planning',
    load_average: loadavg()[0],
    hosts: HOSTS,
    blocks: BLOCKS,
    routes: requests.length,
    p50_ms: percentile(planMs, 50),
    p99_ms: percentile(planMs, 99),
    build_p50_ms: percentile(buildMs, 50),
    build_plus_plan_p50_ms: percentile(oneShotMs, 50),
    placement_p50_ms: percentile(placementMs, 50),
    placement_p99_ms: percentile(placementMs, 99),
    baseline_speedup_1k_hosts: percentile(baselineMs, 50) / percentile(plannerMs, 50),
    baseline_agreement: `${agree}/${compared}`,
  }),
)
