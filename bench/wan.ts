// npm run bench:wan — a 3-hop (`--hops N`: 6 cycles A, B, C twice) chat across homes behind NAT routers (test/network)
// at 10 and 40 ms one-way delay on every home link, each hop direct, each hop relayed by the tracker, and each hop
// relayed by a volunteer (a host in the cloud started with --relay-for-others, serving another model), each hop of
// the relayed swarm punched (the client's channels through the home routers, no relay), against the
// limit: compute (the same chat with tracker, hosts and client all in the cloud namespace, same run) plus the round
// trips a token needs (client↔host per direct hop; client↔cloud plus cloud↔host per relayed one, the tracker and the
// volunteer both being in the cloud), measured each round by TCP connects. The direct swarm runs twice: client-relayed
// (the client carries every hidden state) and hop-to-hop (each host forwards to the next; its limit is compute plus the
// one-way legs client→host A, A→B, B→C, C→client, each half a measured round trip; in the default layout a host-to-host
// leg crosses two shaped home links). A third run of the direct swarm asks no mode, as the app and the API chat (the
// planner's 'auto'). Rounds alternate the modes and the delays
// (`--rounds N`, default 3); every run prints a JSON line with the load average;
// the last line holds the medians, the ratios and the relay's bytes per token.
//
// Placement: the client on the laptop (internet side); the tracker in the cloud; hosts on the home computers hostA,
// hostB, hostC (blocks in that order). `--layout` says where the delay sits (bench/wan-layouts.ts; default homes: every
// home line shaped, the laptop's not).
// Direct: home C's host maps its port by UPnP/NAT-PMP (miniupnpd), homes A and B forward every port to their
// host (a router's "DMZ host" setting). Relayed: the same computers, `neuron host --relay`, reserving at the volunteer
// relay where the swarm has one, else at the tracker.
import { existsSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { packModel } from '../gguf/pack'
import { readManifest } from '../host/publish'
import { STORIES_260K } from '../test/models'
import { buildHomeNetwork, type HomeName, type HomeNetwork, whyNoNamespaces } from '../test/network'
import { BENCH_DIR, benchModel, LLAMA_100M } from './models'
import { median } from './seeded-host'
import {
  COMPUTERS,
  hopHomes,
  hopToHopLegsMs,
  layoutLinks,
  layoutNamed,
  routeRoundTrips,
  setLayoutDelay,
} from './wan-layouts'
import { type DelayResult, emptyResults, summarise } from './wan-results'
import { cpuMs, NamespaceSwarms, namespaceTeardown, openDmz, type Swarm, seamsForwarded } from './wan-swarms'

// The relayed runs measure the relays: their clients punch no channel around them (NEURON_PUNCH=0 in the chat's child,
// wan-swarms.ts). The punched run is the relayed swarm (no host takes connections) with its client punching a
// channel to each host through its home router (the laptop has a public address: ICE connects it to every home,
// test/network/punched-homes.test.ts), so its limit is the direct one and the tracker should relay nothing. The
// punched hop-to-hop run is a relayed swarm in homes A and C alternately, each host punching its own channel to the
// next: its limit is the hop-to-hop one over those homes, and the fraction of seams forwarded host to host is printed.

// `--audits`: trackers as `neuron tracker` runs them, new hosts on probation (known-answer probes, half their steps
// audited); by default the trackers keep their checks out of the data plane (bench/wan-tracker.ts).
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '48' },
    audits: { type: 'boolean', default: false },
    layout: { type: 'string', default: 'homes' },
    hops: { type: 'string', default: '3' },
  },
})
const AUDITS = values.audits
const ROUNDS = Number(values.rounds)
const TOKENS = Number(values.tokens)
const DELAYS_MS = [10, 40]
const HOMES: HomeName[] = ['a', 'b', 'c']
const LAYOUT = layoutNamed(values.layout, 'bench:wan')
const HOPS = Number(values.hops)
if (!Number.isInteger(HOPS) || HOPS < 1 || HOPS > 12) {
  console.error(`bench:wan --hops is 1 to 12 (the model's blocks), not ${values.hops}`)
  process.exit(2)
}
const HOP_HOMES = hopHomes(HOPS)
/**
 * The punched hop-to-hop run's homes: A and C alternately, the pair whose routers both keep source ports, so ICE
 * connects every seam (ice-pairs.test.ts; home B's randomising router connects to neither).
 */
const PUNCHABLE_HOMES = HOP_HOMES.map((_, i) => (i % 2 === 0 ? 'a' : 'c') as HomeName)
/** Token ids of the generated SentencePiece vocabulary (any will do: the weights are random). */
const PROMPT = [1, 450, 1200, 3000, 4100, 5200, 6300, 7400]

const why = whyNoNamespaces()
if (why !== undefined) {
  console.error(
    `bench:wan builds a network of Linux namespaces and cannot here (${why}); run it as root on Linux with ` +
      `iproute2 and nftables.`,
  )
  process.exit(1)
}

const source = await benchModel('q8_0', LLAMA_100M)
const packed = join(BENCH_DIR, 'packed-llama-100m-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
// the volunteer relay's own model: it must serve something, and not the route's blocks
const relayPacked = join(BENCH_DIR, 'packed-stories260k')
if (!existsSync(relayPacked)) await packModel({ source: STORIES_260K, out: relayPacked, blocksPerArtifact: 5 })
const relayManifest = await readManifest(relayPacked)

const load = () => Number(loadavg()[0]?.toFixed(2))
const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0)
const round2 = (x: number) => Math.round(x * 100) / 100
/**
 * The spread of the client's waits between tokens: a median near the
 * round trips with a long tail points at stalls, not at the path.
 */
const gapSpread = (gaps: readonly number[]) => {
  const sorted = [...gaps].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
  return { p50: at(0.5), p90: at(0.9), max: at(1), max_after_token: gaps.indexOf(at(1)) + 1 }
}

let net: HomeNetwork | undefined
let swarms: NamespaceSwarms | undefined
const work = await mkdtemp(join(BENCH_DIR, 'wan-'))
const teardown = namespaceTeardown('bench:wan', work, () => ({ net, swarms }))

const results = emptyResults(DELAYS_MS)
/** Compute per token, ms: each round's loopback chat. */
const computeMs: number[] = []

try {
  net = await buildHomeNetwork({ links: layoutLinks(LAYOUT, DELAYS_MS[0] as number) })
  const n = net
  for (const home of n.upnp ? (['a', 'b'] as const) : HOMES) await openDmz(n, home)
  swarms = new NamespaceSwarms(n, work, manifest, packed)
  const s = swarms
  const places = HOP_HOMES.map((h) => COMPUTERS[h])
  const direct = await s.start({ label: 'direct', port: 7070, places: [...places], relay: false, audits: AUDITS })
  const relayed = await s.start({ label: 'relayed', port: 7071, places: [...places], relay: true, audits: AUDITS })
  const loopback = await s.start({
    label: 'loopback',
    port: 7072,
    places: HOP_HOMES.map(() => 'cloud' as const),
    relay: false,
    audits: AUDITS,
  })
  const punchable = await s.start({
    label: 'punchable',
    port: 7074,
    places: PUNCHABLE_HOMES.map((h) => COMPUTERS[h]),
    relay: true,
    audits: AUDITS,
  })
  const volunteerRelay = { packed: relayPacked, manifest: relayManifest }
  const volunteer = await s.start({
    label: 'volunteer',
    port: 7073,
    places: [...places],
    relay: true,
    audits: AUDITS,
    volunteerRelay,
  })
  for (const swarm of [direct, relayed, volunteer, loopback, punchable]) {
    const rows = await s.untilReachedAsPlanned(swarm)
    console.log(
      JSON.stringify({
        swarm: swarm.label,
        hosts: rows.map((r, i) => ({ place: swarm.places[i], endpoint: r.endpoint })),
      }),
    )
  }
  // warm-up: the clients' first connections, the hosts' first sessions
  for (const swarm of [direct, relayed, volunteer, loopback, punchable])
    await s.chat(swarm, swarm.label === 'loopback' ? 'cloud' : 'laptop', 8, PROMPT)

  const relayedBytes = async (swarm: Swarm) => sum((await s.hosts(swarm)).map((r) => r.relayedBytes ?? 0))
  for (let round = 0; round < ROUNDS; round++) {
    const compute = await s.chat(loopback, 'cloud', TOKENS, PROMPT)
    computeMs.push(1000 / compute.decodeTokensPerSecond)
    const roundComputeMs = 1000 / compute.decodeTokensPerSecond
    console.log(
      JSON.stringify({
        round,
        run: 'loopback (compute)',
        decode_tokens_per_s: round2(compute.decodeTokensPerSecond),
        hop_ms: compute.route.map((h) => round2(h.medianMs)),
        token_gap_ms: gapSpread(compute.gapsMs),
        load_average: load(),
      }),
    )
    const delays = round % 2 === 0 ? DELAYS_MS : [...DELAYS_MS].reverse()
    for (const delayMs of delays) {
      await setLayoutDelay(n, LAYOUT, delayMs)
      const rtt = await routeRoundTrips(n, HOP_HOMES)
      const r = results.get(delayMs) as DelayResult
      const roundTripsDirect = sum(rtt.laptopToRouter)
      const roundTripsRelayed = sum(rtt.cloudToRouter) + HOPS * rtt.laptopToCloud
      r.roundTripsDirectMs.push(roundTripsDirect)
      r.roundTripsRelayedMs.push(roundTripsRelayed)
      const legsHopToHop = hopToHopLegsMs(rtt)
      r.legsHopToHopMs.push(legsHopToHop)
      const limitHopToHop = 1000 / (roundComputeMs + legsHopToHop)
      const legsPunchable = hopToHopLegsMs(await routeRoundTrips(n, PUNCHABLE_HOMES))
      r.legsPunchableMs.push(legsPunchable)
      const limitPunchable = 1000 / (roundComputeMs + legsPunchable)
      const limitDirect = 1000 / (roundComputeMs + roundTripsDirect)
      const limitRelayed = 1000 / (roundComputeMs + roundTripsRelayed)
      console.log(
        JSON.stringify({
          round,
          delay_ms: delayMs,
          run: 'round trips',
          laptop_to_router_ms: rtt.laptopToRouter.map(round2),
          cloud_to_router_ms: rtt.cloudToRouter.map(round2),
          host_to_router_ms: rtt.hostToRouter.map(round2),
          laptop_to_cloud_ms: round2(rtt.laptopToCloud),
          base_rtt_ms: round2(median(rtt.laptopToRouter) - 2 * delayMs),
          load_average: load(),
        }),
      )
      const hopToHop = { ...direct, label: 'direct hop-to-hop' }
      const defaultMode = { ...direct, label: 'direct, default mode' }
      const punched = { ...relayed, label: 'relayed swarm, punched' }
      const punchedSeams = { ...punchable, label: 'homes A and C, punched, hop-to-hop' }
      const modes =
        round % 2 === 0
          ? [direct, hopToHop, defaultMode, relayed, punched, punchedSeams, volunteer]
          : [volunteer, punchedSeams, punched, relayed, defaultMode, hopToHop, direct]
      for (const swarm of modes) {
        const forwarding =
          swarm === hopToHop || swarm === punchedSeams
            ? 'hop-to-hop'
            : swarm === defaultMode
              ? 'default'
              : 'client-relayed'
        const before = swarm.relay ? await relayedBytes(swarm) : 0
        const trackerCpuBefore = cpuMs(swarm.trackerPid)
        const isPunched = swarm === punched || swarm === punchedSeams
        const done = await s.chat(swarm, 'laptop', TOKENS, PROMPT, forwarding, isPunched)
        // a seam is forwarded where the hop before it sent the client no hidden state past the first step's
        const forwarded = seamsForwarded(done, PROMPT.length, manifest.nEmbd)
        const trackerCpuPerToken = (cpuMs(swarm.trackerPid) - trackerCpuBefore) / done.tokens.length
        const bytesPerToken = swarm.relay ? ((await relayedBytes(swarm)) - before) / done.tokens.length : undefined
        const limit =
          swarm.relay && !isPunched
            ? limitRelayed
            : swarm === punchedSeams
              ? limitPunchable
              : swarm === hopToHop || swarm === defaultMode
                ? limitHopToHop
                : limitDirect
        if (swarm === punchedSeams) r.punchedSeamsForwarded.push(forwarded)
        ;(swarm === volunteer
          ? r.volunteer
          : swarm === punchedSeams
            ? r.punchedHopToHop
            : swarm === punched
              ? r.punched
              : swarm.relay
                ? r.relayed
                : swarm === hopToHop
                  ? r.hopToHop
                  : swarm === defaultMode
                    ? r.defaultMode
                    : r.direct
        ).push(done.decodeTokensPerSecond)
        if (bytesPerToken !== undefined)
          (swarm === volunteer
            ? r.volunteerTrackerBytesPerToken
            : swarm === punchedSeams
              ? r.punchedHopToHopBytesPerToken
              : swarm === punched
                ? r.punchedBytesPerToken
                : r.relayedBytesPerToken
          ).push(bytesPerToken)
        console.log(
          JSON.stringify({
            round,
            delay_ms: delayMs,
            run: swarm.label,
            tokens: done.tokens.length,
            decode_tokens_per_s: round2(done.decodeTokensPerSecond),
            limit_tokens_per_s: round2(limit),
            ratio_to_limit: round2(done.decodeTokensPerSecond / limit),
            hop_ms: done.route.map((h) => round2(h.medianMs)),
            reached: done.route.map((h) => h.reached),
            ...(forwarding === 'client-relayed' ? {} : { seams_forwarded: round2(forwarded) }),
            token_gap_ms: gapSpread(done.gapsMs),
            tracker_cpu_ms_per_token: round2(trackerCpuPerToken),
            ...(bytesPerToken === undefined ? {} : { relayed_bytes_per_token: Math.round(bytesPerToken) }),
            load_average: load(),
          }),
        )
      }
    }
  }
  const summary = summarise(results, computeMs)
  console.log(
    JSON.stringify({
      bench: 'wan',
      layout: LAYOUT,
      hops: HOPS,
      model: source,
      tokens: TOKENS,
      rounds: ROUNDS,
      audits: AUDITS,
      compute_ms_per_token: round2(median(computeMs)),
      ...summary,
      load_average: load(),
    }),
  )
} finally {
  await teardown()
}
