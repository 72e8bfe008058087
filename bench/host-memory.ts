// npm run bench:host-memory — one copy of the weights (issue 16). A real `neuron host` process serves and seeds the
// first half of the 1.1B q8_0 llama (embedding + blocks [0, 11)), its weights either read into its own buffers
// (NEURON_NO_MMAP=1: the baseline) or mapped from the artifact files it seeds (ours); a second host serves the rest
// throughout, against a real tracker on loopback. Per run: the host's RssAnon and RssFile (/proc/PID/status), the
// page cache its artifact files hold (fincore), RssAnon + that page cache (what the weights cost the machine: a
// mapped file's resident pages are its page cache, so RssFile is not added again), and the time from spawning the
// host to the first token of a chat through it. The page cache is dropped before each run when this process may
// (root); rounds alternate baseline and ours; every run is printed with the load average; the last JSON line holds
// the medians and the ratios ours ÷ baseline.
//
// Options: --rounds 3  --threads 1
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { Tracker } from '../tracker/server'
import { BENCH_DIR, benchModel } from './models'
import { dropCaches, median, seedDataDir, startHostProcess } from './seeded-host'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

const ROUNDS = Number(arg('rounds', '3'))
const THREADS = Number(arg('threads', '1'))
const PROMPT = 'Once upon a time, in a land far away,'
const DECODE = 8
const MB = 1 << 20

type Run = {
  mmap: boolean
  rss_anon_mb: number
  rss_file_mb: number
  page_cache_mb: number
  total_mb: number
  verified_s: number
  loaded_s: number
  ready_s: number
  first_token_s: number
  weight_mb: number
  mapped_mb: number
}

/** RssAnon and RssFile of a process, in bytes. */
function rssOf(pid: number): { anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key: string) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))?.[1] ?? Number.NaN) * 1024
  return { anon: kb('RssAnon'), file: kb('RssFile') }
}

/** Bytes of these files in the page cache (util-linux fincore). */
function pageCacheOf(files: string[]): number {
  const out = execFileSync('fincore', ['--bytes', '--noheadings', '--raw', '--output', 'RES', ...files], {
    encoding: 'utf8',
  })
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .reduce((s, l) => s + Number(l.trim()), 0)
}

const source = await benchModel('q8_0')
const packed = join(BENCH_DIR, 'packed-llama-1b-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const half = Math.floor(manifest.nLayer / 2)
const front: [number, number] = [0, half]

const work = await mkdtemp(join(BENCH_DIR, 'host-memory-'))
// new keys get credit, so the bench's chat client needs no account set up
const tracker = await Tracker.start({
  dbPath: ':memory:',
  newKeyGrantMicro: 10_000_000,
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
})
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))
const back = startHostProcess({
  trackerUrl: tracker.url,
  modelId: manifest.modelId,
  blocks: [half, manifest.nLayer],
  dataDir: join(work, 'back'),
  threads: THREADS,
})
let dropped = true

/** One run of the measured host: spawn, first token of a chat through it, then its memory while it seeds and serves. */
async function measure(mmap: boolean, round: number): Promise<Run> {
  const dataDir = join(work, `round${round}-${mmap ? 'mmap' : 'read'}`)
  // hard links: this bench measures serving and seeding, not downloading
  const files = await seedDataDir(dataDir, manifest, packed, front)
  dropped = dropCaches() && dropped
  const started = performance.now()
  const host = startHostProcess({
    trackerUrl: tracker.url,
    modelId: manifest.modelId,
    blocks: front,
    dataDir,
    threads: THREADS,
    env: mmap ? {} : { NEURON_NO_MMAP: '1' },
  })
  try {
    // where the time to first token goes: sha256 of the artifacts, loading the weights, the speed test and probes
    const since = () => (performance.now() - started) / 1000
    await host.waitFor(/fetched and verified/, 600_000)
    const verifiedS = since()
    await host.waitFor(/loaded \d+ bytes of weights/, 600_000)
    const loadedS = since()
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
    const loaded = host.output().match(/loaded (\d+) bytes of weights, (\d+) of them mapped/)
    if (loaded === null) throw new Error(`the host did not report its weights:\n${host.output()}`)
    const rss = rssOf(host.child.pid as number)
    const cache = pageCacheOf(files)
    return {
      mmap,
      rss_anon_mb: rss.anon / MB,
      rss_file_mb: rss.file / MB,
      page_cache_mb: cache / MB,
      total_mb: (rss.anon + cache) / MB,
      verified_s: verifiedS,
      loaded_s: loadedS,
      ready_s: readyS,
      first_token_s: firstS,
      weight_mb: Number(loaded[1]) / MB,
      mapped_mb: Number(loaded[2]) / MB,
    }
  } finally {
    await host.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const runs: Run[] = []
try {
  await back.waitFor(/ ready blocks/, 600_000)
  for (let round = 0; round < ROUNDS; round++) {
    // alternate which side goes first, so neither always follows the other
    for (const mmap of round % 2 === 0 ? [false, true] : [true, false]) {
      const run = await measure(mmap, round)
      runs.push(run)
      console.log(JSON.stringify({ round, ...run, caches_dropped: dropped, load_average: loadavg()[0] }))
    }
  }
  const med = (mmap: boolean, key: keyof Run) =>
    median(runs.filter((r) => r.mmap === mmap).map((r) => r[key] as number))
  const keys = [
    'rss_anon_mb',
    'rss_file_mb',
    'page_cache_mb',
    'total_mb',
    'verified_s',
    'loaded_s',
    'ready_s',
    'first_token_s',
  ] as const
  const summary: Record<string, number | string | boolean | number[]> = {
    bench: 'host-memory',
    model: source,
    blocks: front,
    embed: true,
    threads: THREADS,
    rounds: ROUNDS,
    caches_dropped: dropped,
    load_average: loadavg()[0] ?? 0,
    weight_mb: med(true, 'weight_mb'),
    mapped_mb: med(true, 'mapped_mb'),
  }
  for (const k of keys) {
    summary[`baseline_${k}`] = med(false, k)
    summary[`mmap_${k}`] = med(true, k)
  }
  summary.total_ratio = med(true, 'total_mb') / med(false, 'total_mb')
  summary.rss_anon_ratio = med(true, 'rss_anon_mb') / med(false, 'rss_anon_mb')
  summary.first_token_ratio = med(true, 'first_token_s') / med(false, 'first_token_s')
  // the load alone: from verified artifacts to weights in place
  const loadS = (mmap: boolean) => median(runs.filter((r) => r.mmap === mmap).map((r) => r.loaded_s - r.verified_s))
  summary.baseline_load_s = loadS(false)
  summary.mmap_load_s = loadS(true)
  summary.load_ratio = loadS(true) / loadS(false)
  console.log(JSON.stringify(summary))
} finally {
  await back.stop()
  await publication.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
