// npm run bench:peers — Neuron against the peer users reach for first: llama.cpp's RPC backend, the same GGUF split
// over 3 machines. llama.cpp: three `ggml-rpc-server`s (one thread each) hold a third of the layers each, and
// `llama-bench --rpc` (the client, on the laptop) runs the graph through them, as `llama-cli --rpc` would; built from
// the llama.cpp source node-llama-cpp bundles, on node-llama-cpp's prebuilt CPU kernels (bench/llama-tools.ts). Neuron:
// 3 `neuron host`s (one thread each) with the same thirds, and a chat from the laptop in the default mode (no
// forwarding asked, as the app and the API chat). Decode tokens/s (`--tokens`, from a short prompt) and prefill
// tokens/s (a `--prompt`-token prompt: llama-bench's pp test; Neuron's route opening to its first token).
//
// Settings: loopback (all of it in one namespace, no delay), then the namespace network (test/network) with the
// machines in homes A, B and C (their routers forward every port: a "DMZ host") and the client on the laptop, at 10 and
// 40 ms one way, in each `--layouts` layout (bench/wan-layouts.ts: `homes`, every home line d, host↔host 2d;
// `far-client`, the hosts in one region, the client d away). Rounds (`--rounds`, default 3) alternate the settings'
// order and the two systems; every run prints a JSON line with the load average; the last line holds the medians and
// the ratios (Neuron ÷ llama.cpp RPC).
import { existsSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { packModel } from '../gguf/pack'
import { readManifest } from '../host/publish'
import { buildHomeNetwork, type HomeName, type HomeNetwork, type Place, whyNoNamespaces } from '../test/network'
import { type LlamaTools, llamaBenchRows, llamaTools } from './llama-tools'
import { BENCH_DIR, benchModel, LLAMA_100M } from './models'
import { median } from './seeded-host'
import { COMPUTERS, type LayoutName, layoutNamed, routeRoundTrips, setLayoutDelay } from './wan-layouts'
import { NamespaceSwarms, namespaceTeardown, openDmz, type Swarm, seamsForwarded } from './wan-swarms'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '48' },
    prompt: { type: 'string', default: '128' },
    layouts: { type: 'string', default: 'homes,far-client' },
    threads: { type: 'string', default: '1' },
  },
})
const ROUNDS = Number(values.rounds)
const TOKENS = Number(values.tokens)
const PROMPT_TOKENS = Number(values.prompt)
const THREADS = Number(values.threads)
const LAYOUTS = values.layouts.split(',').map((l) => layoutNamed(l, 'bench:peers'))
const DELAYS_MS = [10, 40]
const HOMES: HomeName[] = ['a', 'b', 'c']
const RPC_PORT = 50052
/** Token ids of the generated SentencePiece vocabulary (any will do: the weights are random). */
const SHORT_PROMPT = [1, 450, 1200, 3000, 4100, 5200, 6300, 7400]
const LONG_PROMPT = [1, ...Array.from({ length: PROMPT_TOKENS - 1 }, (_, i) => 100 + ((i * 7919) % 30000))]

const why = whyNoNamespaces()
if (why !== undefined) {
  console.error(`bench:peers builds a network of Linux namespaces and cannot here (${why}); run it as root on Linux.`)
  process.exit(1)
}

interface Setting {
  readonly label: string
  /** Unset: loopback, everything in the cloud namespace. */
  readonly layout?: LayoutName
  readonly delayMs: number
}
const SETTINGS: Setting[] = [
  { label: 'loopback', delayMs: 0 },
  ...LAYOUTS.flatMap((layout) => DELAYS_MS.map((delayMs) => ({ label: `${layout} ${delayMs} ms`, layout, delayMs }))),
]
interface Figures {
  neuronDecode: number[]
  neuronPrefill: number[]
  rpcDecode: number[]
  rpcPrefill: number[]
}
const figures = new Map<string, Figures>(
  SETTINGS.map((s) => [s.label, { neuronDecode: [], neuronPrefill: [], rpcDecode: [], rpcPrefill: [] }]),
)

const log = (line: string) => process.stderr.write(`[bench:peers] ${line}\n`)
const load = () => Number(loadavg()[0]?.toFixed(2))
const round2 = (x: number) => Math.round(x * 100) / 100

const source = await benchModel('q8_0', LLAMA_100M)
const packed = join(BENCH_DIR, 'packed-llama-100m-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const rpc = await llamaTools(log)

let net: HomeNetwork | undefined
let swarms: NamespaceSwarms | undefined
const work = await mkdtemp(join(BENCH_DIR, 'peers-'))
const teardown = namespaceTeardown('bench:peers', work, () => ({ net, swarms }))

/** Three RPC servers, one thread each, listening on `port`s in `places`; resolves once each is up. */
async function startRpcServers(s: NamespaceSwarms, r: LlamaTools, places: readonly Place[], ports: readonly number[]) {
  await Promise.all(
    places.map((place, i) =>
      s
        // line-buffered, so its start line reaches us while it runs
        .programIn(
          place,
          'stdbuf',
          ['-oL', r.rpcServer, '-H', '0.0.0.0', '-p', String(ports[i]), '-t', String(THREADS)],
          `ggml-rpc-server ${i}`,
          r.env,
        )
        .waitFor(/Starting RPC server/, 30_000),
    ),
  )
}

/** llama-bench from `place` through `servers`: one prompt test and one decode test, each run once after a warm-up. */
async function llamaBench(s: NamespaceSwarms, place: Place, servers: readonly string[]) {
  const args = [
    ...['-m', source, '--rpc', servers.join(','), '-ngl', '99', '-ts', servers.map(() => '1').join('/')],
    ...['-t', String(THREADS), '-p', String(PROMPT_TOKENS), '-n', String(TOKENS), '-r', '1', '-o', 'jsonl'],
  ]
  const bench = s.programIn(place, rpc.llamaBench, args, 'llama-bench', rpc.env)
  await new Promise<void>((resolve) => bench.child.once('exit', () => resolve()))
  const rows = llamaBenchRows(bench.output())
  const prefill = rows.find((r) => r.n_prompt > 0 && r.n_gen === 0)
  const decode = rows.find((r) => r.n_gen > 0 && r.n_prompt === 0)
  if (prefill === undefined || decode === undefined)
    throw new Error(`llama-bench gave no prompt or no decode row: ${JSON.stringify(rows)}`)
  return { prefill: prefill.avg_ts, decode: decode.avg_ts, devices: decode.devices }
}

async function setSetting(n: HomeNetwork, setting: Setting): Promise<void> {
  if (setting.layout === undefined) return // loopback runs in the cloud namespace: no shaped line on its path
  await setLayoutDelay(n, setting.layout, setting.delayMs)
  if (setting.layout === 'homes') await n.setLink('laptop', { delayMs: 0 })
}

try {
  // every line shaped from the start (the laptop's too), so that a round can move between the layouts
  net = await buildHomeNetwork({
    links: { a: { delayMs: 0 }, b: { delayMs: 0 }, c: { delayMs: 0 }, laptop: { delayMs: 0 } },
  })
  const n = net
  for (const home of HOMES) await openDmz(n, home)
  swarms = new NamespaceSwarms(n, work, manifest, packed)
  const s = swarms
  const places = HOMES.map((h) => COMPUTERS[h])
  // the trackers check nothing on the data plane (bench/wan-tracker.ts), as bench:wan without --audits
  const homes = await s.start({ label: 'homes', port: 7070, places: [...places], relay: false, audits: false })
  const loopback = await s.start({
    label: 'loopback',
    port: 7072,
    places: HOMES.map(() => 'cloud' as const),
    relay: false,
    audits: false,
  })
  for (const swarm of [homes, loopback]) await s.untilReachedAsPlanned(swarm)
  const loopbackPorts = HOMES.map((_, i) => RPC_PORT + 1 + i)
  await startRpcServers(s, rpc, places, [RPC_PORT, RPC_PORT, RPC_PORT])
  await startRpcServers(s, rpc, ['cloud', 'cloud', 'cloud'], loopbackPorts)
  const homeServers = HOMES.map((h) => `${n.homes[h].wan}:${RPC_PORT}`)
  const loopbackServers = loopbackPorts.map((p) => `127.0.0.1:${p}`)
  const where = (setting: Setting): { swarm: Swarm; client: Place; servers: string[] } =>
    setting.layout === undefined
      ? { swarm: loopback, client: 'cloud', servers: loopbackServers }
      : { swarm: homes, client: 'laptop', servers: homeServers }
  // warm-up: the clients' first connections, the hosts' first sessions
  for (const swarm of [homes, loopback]) await s.chat(swarm, swarm === homes ? 'laptop' : 'cloud', 8, SHORT_PROMPT)

  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? SETTINGS : [...SETTINGS].reverse()
    for (const setting of order) {
      await setSetting(n, setting)
      const { swarm, client, servers } = where(setting)
      const f = figures.get(setting.label) as Figures
      const rtt = setting.layout === undefined ? undefined : await routeRoundTrips(n, HOMES)
      const neuron = async () => {
        const decode = await s.chat(swarm, client, TOKENS, SHORT_PROMPT, 'default')
        const prefill = await s.chat(swarm, client, 1, LONG_PROMPT, 'default')
        f.neuronDecode.push(decode.decodeTokensPerSecond)
        f.neuronPrefill.push(PROMPT_TOKENS / (prefill.prefillMs / 1000))
        console.log(
          JSON.stringify({
            round,
            setting: setting.label,
            run: 'neuron (default mode)',
            decode_tokens_per_s: round2(decode.decodeTokensPerSecond),
            prefill_tokens_per_s: round2(PROMPT_TOKENS / (prefill.prefillMs / 1000)),
            // the long prompt's chat from its start: the route's planning and opening, then the prefill
            first_token_ms: prefill.firstTokenMs,
            seams_forwarded: seamsForwarded(decode, SHORT_PROMPT.length, manifest.nEmbd),
            hop_ms: decode.route.map((h) => round2(h.medianMs)),
            ...(rtt === undefined ? {} : { client_to_router_rtt_ms: rtt.laptopToRouter.map(round2) }),
            load_average: load(),
          }),
        )
      }
      const llamaCpp = async () => {
        const r = await llamaBench(s, client, servers)
        f.rpcDecode.push(r.decode)
        f.rpcPrefill.push(r.prefill)
        console.log(
          JSON.stringify({
            round,
            setting: setting.label,
            run: 'llama.cpp rpc (llama-bench)',
            decode_tokens_per_s: round2(r.decode),
            prefill_tokens_per_s: round2(r.prefill),
            devices: r.devices,
            load_average: load(),
          }),
        )
      }
      if (round % 2 === 0) {
        await llamaCpp()
        await neuron()
      } else {
        await neuron()
        await llamaCpp()
      }
    }
  }
  const results: Record<string, number> = {}
  for (const [label, f] of figures) {
    const key = label.replace(/ ms$/, 'ms').replace(/[ -]/g, '_')
    results[`decode_ratio_${key}`] = round2(median(f.neuronDecode) / median(f.rpcDecode))
    results[`prefill_ratio_${key}`] = round2(median(f.neuronPrefill) / median(f.rpcPrefill))
    results[`neuron_decode_tokens_per_s_${key}`] = round2(median(f.neuronDecode))
    results[`rpc_decode_tokens_per_s_${key}`] = round2(median(f.rpcDecode))
    results[`neuron_prefill_tokens_per_s_${key}`] = round2(median(f.neuronPrefill))
    results[`rpc_prefill_tokens_per_s_${key}`] = round2(median(f.rpcPrefill))
  }
  console.log(
    JSON.stringify({
      bench: 'peers',
      model: source,
      hops: 3,
      threads: THREADS,
      decode_tokens: TOKENS,
      prompt_tokens: PROMPT_TOKENS,
      rounds: ROUNDS,
      ...results,
      load_average: load(),
    }),
  )
} finally {
  await teardown()
}
