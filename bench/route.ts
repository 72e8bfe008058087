// npm run bench:route — decode speed through a route of 1, 2 and 3 hosts (real processes on
// loopback) against node-llama-cpp running the whole model in one process, same threads per
// compute, same run. Rounds alternate the baseline and each route (`--rounds N`, default 3); every
// run prints one JSON line with the load average; the last line holds the medians and the ratios.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { LlamaCompletion } from 'node-llama-cpp'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { splitBlocks } from '../protocol'
import type { NeuronProcess } from '../test/processes'
import { sharedLlama } from '../text/tokenizer'
import { BENCH_DIR, benchModel } from './models'
import { startSeededHost } from './seeded-host'
import { stepSignatureCost } from './step-signature-cost'
import { startTrackerProcess, type TrackerProcess } from './tracker-process'

// `--threads N` (default 1): on a 2-core machine, hosts of 2 threads each contend (ggml's worker
// threads spin between ops), so 1 thread per compute is the fair comparison there.
// `--steady`: hosts start past probation, a quarter of their sessions audited (the swarm's steady rate) instead of
// every one (new hosts'). Audits run once a session is over, off its critical path.
// `--audit-rate R`: the steady rate (0 measures the data plane alone, without audits' re-runs).
// `--unaudited-twin`: also a route of 3 on a tracker of its own that audits nothing, in the same rounds, so what
// audits cost is measured in one run (its ratio is `decode_ratio_3_hops_unaudited`).
const { values } = parseArgs({
  options: {
    threads: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    steady: { type: 'boolean', default: false },
    'audit-rate': { type: 'string' },
    'unaudited-twin': { type: 'boolean', default: false },
  },
})
const AUDIT_RATE = values['audit-rate'] === undefined ? undefined : Number(values['audit-rate'])
const THREADS = Number(values.threads)
const ROUNDS = Number(values.rounds)
const PROMPT = 'Once upon a time, in a land far away,'
const DECODE = 64
const ROUTES = [1, 2, 3]

const source = await benchModel('q8_0')
const packed = join(BENCH_DIR, 'packed-llama-1b-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? Number.NaN
}

// Baseline: llama.cpp on the whole model in this process, loaded once; each round a fresh sequence.
const llama = await sharedLlama()
const model = await llama.loadModel({ modelPath: source, gpuLayers: 0 })
const context = await model.createContext({ contextSize: 512, threads: THREADS })
const sequence = context.getSequence()

async function baseline(): Promise<{ tokens: number; tps: number }> {
  await sequence.clearHistory()
  const completion = new LlamaCompletion({ contextSequence: sequence })
  let first = 0
  let count = 0
  await completion.generateCompletion(PROMPT, {
    maxTokens: DECODE,
    temperature: 0,
    onToken: (tokens) => {
      count += tokens.length
      if (first === 0) first = performance.now()
    },
  })
  return { tokens: count, tps: (count - 1) / ((performance.now() - first) / 1000) }
}

/**
 * One swarm per route length, each on its own tracker so a route of n hops is the only one it can plan. Hosts
 * stay up between rounds; their probation lasts the whole bench (probes an hour apart), so every round sees the
 * audit rate of new hosts, as a fresh swarm would (with `--steady`, none is on probation).
 */
interface RouteSwarm {
  readonly hops: number
  /** `3_hops`, or `3_hops_unaudited` for the twin. */
  readonly label: string
  readonly tracker: TrackerProcess
  readonly client: SwarmClient
  close(): Promise<void>
}

async function startRoute(hops: number, work: string, unaudited = false): Promise<RouteSwarm> {
  const label = `${hops}_hops${unaudited ? '_unaudited' : ''}`
  const auditRate = unaudited ? 0 : AUDIT_RATE
  // A new key gets a grant: the bench's clients pay like a public tracker's first-time users. Each tracker runs in a
  // process of its own, as deployed (another machine): its metering of every step's receipts stays off the client's
  // event loop, where it would sit on the path of every hop.
  const tracker = await startTrackerProcess({
    dbPath: ':memory:',
    newKeyGrantMicro: 1_000_000_000,
    // the bench's clients are not farming: no proof of work, no per-prefix bound (bench/grant-work.ts measures those)
    grantWorkBits: 0,
    grantsPerPrefixPerDay: 1_000_000,
    checks: {
      probationProbeEveryMs: 3_600_000,
      ...(values.steady || unaudited ? { probationProbes: 0 } : {}),
      ...(auditRate === undefined ? {} : { auditRate }),
    },
  })
  const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, `publisher-${label}`))
  const processes: NeuronProcess[] = []
  const close = async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await publication.close()
    await tracker.close()
  }
  try {
    for (const [i, [a, b]] of splitBlocks(manifest.nLayer, hops).entries()) {
      const host = await startSeededHost({
        trackerUrl: tracker.url,
        manifest,
        packed,
        dataDir: join(work, `${label}-host${i}`),
        blocks: [a, b],
        threads: THREADS,
      })
      processes.push(host)
      await host.waitFor(/ ready blocks/, 300_000)
    }
    const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
    return {
      hops,
      label,
      tracker,
      client,
      close: async () => {
        client.close()
        await close()
      },
    }
  } catch (error) {
    await close()
    throw error
  }
}

async function throughRoute(swarm: RouteSwarm) {
  let audits: number[] = []
  const run = swarm.client.generate({
    modelId: manifest.modelId,
    prompt: PROMPT,
    maxTokens: DECODE,
    stopAtEog: false,
    onRoute: (hops) => {
      audits = hops.map((h) => h.audit ?? 0)
    },
  })
  let next = await run.next()
  while (!next.done) next = await run.next()
  return { summary: next.value, audits }
}

const work = await mkdtemp(join(BENCH_DIR, 'route-'))
const swarms: RouteSwarm[] = []
const baselineTps: number[] = []
const routeTps = new Map<string, { hops: number; tps: number[] }>()
try {
  for (const hops of ROUTES) swarms.push(await startRoute(hops, work))
  if (values['unaudited-twin']) swarms.push(await startRoute(3, work, true))
  for (const s of swarms) routeTps.set(s.label, { hops: s.hops, tps: [] })
  for (const swarm of swarms) await throughRoute(swarm) // warm-up: tokenizer load, first connections, first probes
  for (let round = 0; round < ROUNDS; round++) {
    const b = await baseline()
    baselineTps.push(b.tps)
    console.log(
      JSON.stringify({
        round,
        run: 'node-llama-cpp',
        threads: THREADS,
        tokens: b.tokens,
        decode_tokens_per_s: b.tps,
        load_average: loadavg()[0],
      }),
    )
    for (const swarm of swarms) {
      const { summary: s, audits } = await throughRoute(swarm)
      routeTps.get(swarm.label)?.tps.push(s.decodeTokensPerSecond)
      console.log(
        JSON.stringify({
          round,
          run: `route of ${swarm.hops}${swarm.label.endsWith('unaudited') ? ', no audits' : ''}`,
          hops: s.route.map((h) => ({ blocks: h.blocks, median_ms: h.medianMs })),
          audit_rates: audits,
          decode_tokens_per_s: s.decodeTokensPerSecond,
          ratio: s.decodeTokensPerSecond / b.tps,
          load_average: loadavg()[0],
        }),
      )
    }
  }
  const baselineMedian = median(baselineTps)
  // Part of each hop's overhead: the client signs every step, the host checks it (a decode step's f16 hidden state)
  const signature = stepSignatureCost(manifest.nEmbd * 2)
  const results: Record<string, number> = {
    step_sign_ms_per_hop: signature.signMs,
    step_verify_ms_per_hop: signature.verifyMs,
  }
  for (const [label, { hops, tps }] of routeTps) {
    const m = median(tps)
    results[`decode_ratio_${label}`] = m / baselineMedian
    results[`overhead_ms_per_hop_${label}`] = (1000 / m - 1000 / baselineMedian) / hops
    results[`decode_tokens_per_s_${label}`] = m
  }
  console.log(
    JSON.stringify({
      bench: 'route',
      model: source,
      threads: THREADS,
      decode_tokens: DECODE,
      steady: values.steady,
      audit_rate: AUDIT_RATE ?? 'default',
      baseline_tokens_per_s: baselineMedian,
      ...results,
      rounds: ROUNDS,
      load_average: loadavg()[0],
    }),
  )
} finally {
  for (const s of swarms) await s.close()
  await context.dispose()
  await model.dispose()
  await rm(work, { recursive: true, force: true })
}
