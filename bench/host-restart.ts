// npm run bench:host-restart — a host restarting over artifacts it verified before. A real `neuron host` process
// serves the first half of the 1.1B llama (embedding + blocks [0, 11)) from a data dir that already holds its
// artifacts, and is stopped and started again; a second host serves the rest throughout, against a real tracker on
// loopback. The baseline (NEURON_NO_VERIFIED_CACHE=1) hashes every artifact again at each start (webtorrent's SHA-1
// of every piece, then our sha256 of every file); ours trusts `<model>.verified.json` for files whose stat is
// unchanged. One warm-up start writes the record; rounds then alternate baseline and ours over the same data dir.
// Per run: seconds from spawning the host to its artifacts verified, to ready, to the first token of a chat through
// it, and how many files it read back for their sha256. The page cache is dropped before each run when this process
// may (root); every run is printed with the load average; the
// last JSON line holds the medians and ratios ours ÷ baseline.
//
// Options: --rounds 3  --threads 1  --type q8_0 (the weights' type: f32, f16, q8_0, q4_0)
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { SwarmClient } from '../client/swarm-client'
import type { GenerateOptions } from '../gguf/generate'
import { packModel } from '../gguf/pack'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { artifactsForBlocks } from '../protocol'
import { Tracker } from '../tracker/server'
import { BENCH_DIR, benchModel } from './models'
import { dropCaches, median, seedDataDir, startHostProcess } from './seeded-host'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

const ROUNDS = Number(arg('rounds', '3'))
const THREADS = Number(arg('threads', '1'))
const TYPE = arg('type', 'q8_0') as GenerateOptions['type']
const PROMPT = 'Once upon a time, in a land far away,'
const DECODE = 4

type Run = { cached: boolean; verified_s: number; ready_s: number; first_token_s: number; sha256_read_back: number }

const source = await benchModel(TYPE)
const packed = join(BENCH_DIR, `packed-llama-1b-${TYPE}`)
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const half = Math.floor(manifest.nLayer / 2)
const front: [number, number] = [0, half]

const work = await mkdtemp(join(BENCH_DIR, 'host-restart-'))
// new keys get credit, so the bench's chat client needs no account set up
const tracker = await Tracker.start({
  dbPath: ':memory:',
  newKeyGrantMicro: 10_000_000,
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
})
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))

// The restarted host's data dir, linked once: another link to these inodes later would change their ctime.
const dataDir = join(work, 'front')
await seedDataDir(dataDir, manifest, packed, front)
const startHost = (blocks: [number, number], dir: string, env: NodeJS.ProcessEnv = {}) =>
  startHostProcess({ trackerUrl: tracker.url, modelId: manifest.modelId, blocks, dataDir: dir, threads: THREADS, env })
const back = startHost([half, manifest.nLayer], join(work, 'back'))
let dropped = true

/**
 * One start of the front host over its data dir: spawn, verified artifacts, ready, first token of a chat through it.
 */
async function measure(cached: boolean): Promise<Run> {
  dropped = dropCaches() && dropped
  const started = performance.now()
  const host = startHost(front, dataDir, cached ? {} : { NEURON_NO_VERIFIED_CACHE: '1' })
  try {
    const since = () => (performance.now() - started) / 1000
    await host.waitFor(/fetched and verified/, 600_000)
    const verifiedS = since()
    await host.waitFor(/ ready blocks/, 600_000)
    const readyS = since()
    const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
    let firstS = 0
    try {
      const chat = client.generate({ modelId: manifest.modelId, prompt: PROMPT, maxTokens: DECODE, stopAtEog: false })
      let next = await chat.next()
      firstS = since()
      while (!next.done) next = await chat.next()
    } finally {
      client.close()
    }
    const readBack = host.output().match(/checking its sha256 on disk/g)?.length ?? 0
    return { cached, verified_s: verifiedS, ready_s: readyS, first_token_s: firstS, sha256_read_back: readBack }
  } finally {
    await host.stop()
  }
}

const runs: Run[] = []
try {
  await back.waitFor(/ ready blocks/, 600_000)
  // the first start verifies every file and writes the record ours trusts from then on
  console.log(JSON.stringify({ warm_up: true, ...(await measure(true)), load_average: loadavg()[0] }))
  for (let round = 0; round < ROUNDS; round++) {
    // alternate which side goes first, so neither always follows the other
    for (const cached of round % 2 === 0 ? [false, true] : [true, false]) {
      const run = await measure(cached)
      runs.push(run)
      console.log(JSON.stringify({ round, ...run, caches_dropped: dropped, load_average: loadavg()[0] }))
    }
  }
  const med = (cached: boolean, key: keyof Run) =>
    median(runs.filter((r) => r.cached === cached).map((r) => r[key] as number))
  const summary: Record<string, number | string | boolean | number[]> = {
    bench: 'host-restart',
    model: source,
    blocks: front,
    threads: THREADS,
    rounds: ROUNDS,
    caches_dropped: dropped,
    load_average: loadavg()[0] ?? 0,
    artifact_mb: artifactsForBlocks(manifest, front).reduce((s, a) => s + a.bytes, 0) / (1 << 20),
  }
  for (const k of ['verified_s', 'ready_s', 'first_token_s', 'sha256_read_back'] as const) {
    summary[`baseline_${k}`] = med(false, k)
    summary[`cached_${k}`] = med(true, k)
  }
  summary.verified_ratio = med(true, 'verified_s') / med(false, 'verified_s')
  summary.first_token_ratio = med(true, 'first_token_s') / med(false, 'first_token_s')
  console.log(JSON.stringify(summary))
} finally {
  await back.stop()
  await publication.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
