// npm run bench:wan-speculative — speculative decoding across homes behind NAT routers (test/network): a 3-hop chat
// over stories260K, each hop a home computer reached directly, the client on the laptop 40 ms one way from each host
// (`--delay`; `--layout` says where the delay sits, bench/wan-layouts.ts). Plain, self-drafting (every draft accepted)
// and a damaged draft (same tokenizer, two blocks zeroed: a realistic acceptance), each client-relayed and hop-to-hop,
// alternating (`--rounds N`, default 3), each beside the limit of its plain route: compute (the same chat with
// everything in the cloud namespace, same round) plus the round trips a token needs client-relayed, or the one-way
// legs client→A→B→C→client hop-to-hop.
// Reuses bench/wan-swarms.ts for the swarm; the chats run in test/network/speculative-child.ts.
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { packModel } from '../gguf/pack'
import { damagedCopy } from '../test/draft-models'
import { REPO_ROOT, STORIES_260K } from '../test/models'
import { buildHomeNetwork, type HomeName, type HomeNetwork, type Place, whyNoNamespaces } from '../test/network'
import { type NeuronProcess, watchProcess } from '../test/processes'
import { BENCH_DIR } from './models'
import { median } from './seeded-host'
import { hopToHopLegsMs, layoutLinks, layoutNamed, routeRoundTrips } from './wan-layouts'
import { NamespaceSwarms, openDmz, type Swarm } from './wan-swarms'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '48' },
    k: { type: 'string', default: '4' },
    delay: { type: 'string', default: '40' },
    layout: { type: 'string', default: 'homes' },
  },
})
const LAYOUT = layoutNamed(values.layout, 'bench:wan-speculative')
const [ROUNDS, TOKENS, K, DELAY_MS] = [
  Number(values.rounds),
  Number(values.tokens),
  Number(values.k),
  Number(values.delay),
]
const HOMES: HomeName[] = ['a', 'b', 'c']
const PROMPT = [1, 403, 407, 261, 378]
const round2 = (x: number) => Math.round(x * 100) / 100
const load = () => round2(loadavg()[0] ?? 0)

const why = whyNoNamespaces()
if (why !== undefined) {
  console.error(
    `bench:wan-speculative builds a network of Linux namespaces and cannot here (${why}); run it as root on Linux ` +
      `with iproute2 and nftables.`,
  )
  process.exit(1)
}
await mkdir(BENCH_DIR, { recursive: true })
const work = await mkdtemp(join(BENCH_DIR, 'wan-speculative-'))
const packed = join(work, 'packed')
const manifest = await packModel({ source: STORIES_260K, out: packed, blocksPerArtifact: 1 })
const damaged = await damagedCopy(STORIES_260K, join(work, 'damaged.gguf'), [1, 3])
const drafts = [
  { label: 'plain' },
  { label: 'self_draft', draft: STORIES_260K },
  { label: 'damaged_draft', draft: damaged },
]
const runs = drafts.flatMap((d) => [
  { ...d, forwarding: 'client-relayed' as const },
  { ...d, label: `hop_to_hop_${d.label}`, forwarding: 'hop-to-hop' as const },
])

interface Done {
  tokens: number[]
  decodeTokensPerSecond: number
  steps: number
  speculation?: { verifySteps: number; drafted: number; accepted: number }
}
const children: NeuronProcess[] = []
async function chat(
  n: HomeNetwork,
  swarm: Swarm,
  place: Place,
  forwarding = 'client-relayed',
  draft?: string,
): Promise<Done> {
  const args = [
    swarm.trackerUrl,
    manifest.modelId,
    String(TOKENS),
    PROMPT.join(','),
    forwarding,
    ...(draft === undefined ? [] : [draft, String(K)]),
  ]
  const child = n.spawnIn(
    place,
    process.execPath,
    ['--import', 'tsx', join(REPO_ROOT, 'test/network/speculative-child.ts'), ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const p = watchProcess(child, `speculative chat in ${place}`)
  children.push(p)
  const done = (JSON.parse((await p.waitFor(/^\{"done".*$/m, 300_000))[0]) as { done: Done }).done
  await p.stop()
  return done
}

let net: HomeNetwork | undefined
let swarms: NamespaceSwarms | undefined
try {
  net = await buildHomeNetwork({ links: layoutLinks(LAYOUT, DELAY_MS) })
  const n = net
  for (const home of n.upnp ? (['a', 'b'] as const) : HOMES) await openDmz(n, home)
  swarms = new NamespaceSwarms(n, work, manifest, packed)
  const direct = await swarms.start({
    label: 'direct',
    port: 7080,
    places: ['hostA', 'hostB', 'hostC'],
    relay: false,
    audits: false,
  })
  const loopback = await swarms.start({
    label: 'loopback',
    port: 7081,
    places: ['cloud', 'cloud', 'cloud'],
    relay: false,
    audits: false,
  })
  for (const swarm of [direct, loopback]) await swarms.untilReachedAsPlanned(swarm)
  for (const r of runs) await chat(n, direct, 'laptop', r.forwarding, r.draft) // warm-up
  const tps = new Map(runs.map((r) => [r.label, [] as number[]]))
  const acceptance = new Map(runs.map((r) => [r.label, [] as number[]]))
  const limits: number[] = []
  const limitsHopToHop: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const compute = await chat(n, loopback, 'cloud')
    const rtt = await routeRoundTrips(n, HOMES)
    const trips = rtt.laptopToRouter
    const limit = 1000 / (1000 / compute.decodeTokensPerSecond + trips.reduce((s, x) => s + x, 0))
    limits.push(limit)
    const limitHopToHop = 1000 / (1000 / compute.decodeTokensPerSecond + hopToHopLegsMs(rtt))
    limitsHopToHop.push(limitHopToHop)
    console.log(
      JSON.stringify({
        round,
        run: 'loopback (compute)',
        decode_tokens_per_s: round2(compute.decodeTokensPerSecond),
        round_trips_ms: trips.map(round2),
        host_to_router_ms: rtt.hostToRouter.map(round2),
        limit_plain_tokens_per_s: round2(limit),
        limit_hop_to_hop_plain_tokens_per_s: round2(limitHopToHop),
        load_average: load(),
      }),
    )
    for (const r of round % 2 === 0 ? runs : [...runs].reverse()) {
      const done = await chat(n, direct, 'laptop', r.forwarding, r.draft)
      const s = done.speculation
      tps.get(r.label)?.push(done.decodeTokensPerSecond)
      if (s !== undefined && s.drafted > 0) acceptance.get(r.label)?.push(s.accepted / s.drafted)
      console.log(
        JSON.stringify({
          round,
          delay_ms: DELAY_MS,
          run: r.label,
          tokens: done.tokens.length,
          route_steps: done.steps,
          decode_tokens_per_s: round2(done.decodeTokensPerSecond),
          ratio_to_plain_limit: round2(
            done.decodeTokensPerSecond / (r.forwarding === 'hop-to-hop' ? limitHopToHop : limit),
          ),
          ...(s === undefined ? {} : { drafted: s.drafted, accepted: s.accepted }),
          load_average: load(),
        }),
      )
    }
  }
  const plain = median(tps.get('plain') ?? [])
  const summary: Record<string, number> = {
    plain_tokens_per_s: round2(plain),
    limit_plain_tokens_per_s: round2(median(limits)),
    limit_hop_to_hop_plain_tokens_per_s: round2(median(limitsHopToHop)),
  }
  // every run against the plain client-relayed route (the hop-to-hop runs against their own plain route too)
  for (const r of runs.slice(1)) {
    summary[`${r.label}_tokens_per_s`] = round2(median(tps.get(r.label) ?? []))
    summary[`${r.label}_over_plain`] = round2(median(tps.get(r.label) ?? []) / plain)
    if (r.draft !== undefined) summary[`${r.label}_acceptance`] = round2(median(acceptance.get(r.label) ?? []))
    if (r.forwarding === 'hop-to-hop' && r.draft !== undefined)
      summary[`${r.label}_over_hop_to_hop_plain`] = round2(
        median(tps.get(r.label) ?? []) / median(tps.get('hop_to_hop_plain') ?? []),
      )
  }
  console.log(
    JSON.stringify({
      bench: 'wan-speculative',
      model: 'stories260K',
      hops: 3,
      delay_ms: DELAY_MS,
      layout: LAYOUT,
      k: K,
      tokens: TOKENS,
      rounds: ROUNDS,
      ...summary,
      load_average: load(),
    }),
  )
} finally {
  await Promise.all(children.map((c) => c.stop()))
  await swarms?.close()
  await net?.close()
  await rm(work, { recursive: true, force: true })
}
