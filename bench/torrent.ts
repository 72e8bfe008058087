// npm run bench:torrent [-- --rounds 3 --blocks 22] — fetching a ~1 GB artifact set (the 1.1B model at q8_0;
// --blocks 4 makes it ~330 MB) over BitTorrent from two seeding hosts (separate `neuron publish` processes) on
// loopback, sha256 checks included, against `cp` of the same bytes. Debian's aria2c is the outside reference, when
// installed: aria2c downloading from our two seeders, and our client downloading from two aria2c seeders (a swarm of
// its own, on its own tracker). Rounds alternate the sides (the order reversed every other round); each prints one JSON
// line with the load average; the last line holds the medians
// and the ratios. CPU is the fetching side's, per GB fetched:
// ours from getrusage (every thread of this process, workers included; the in-process tracker's share is
// negligible) and its main thread's alone (/proc/self/task), aria2c's from GNU time.
import { type ChildProcess, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { packModel } from '../gguf/pack'
import { ArtifactStore } from '../host/artifacts/artifact-store'
import { createModelTorrent } from '../host/artifacts/model-torrent'
import { verifyArtifact } from '../host/artifacts/verify-artifact'
import { readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import type { Manifest } from '../protocol'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { Tracker } from '../tracker/server'
import { aria2cDownload, aria2cSeed, HAVE_ARIA2C } from './aria2c'
import { measured, median, timed } from './cpu-use'
import { BENCH_DIR, benchModel, LLAMA_1B } from './models'

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, blocks: { type: 'string', default: String(LLAMA_1B.blocks) } },
})
const ROUNDS = Number(values.rounds)
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`--rounds takes a whole number of at least 1, got ${values.rounds}`)
const BLOCKS = Number(values.blocks)
if (!Number.isInteger(BLOCKS) || BLOCKS < 1)
  throw new Error(`--blocks takes a whole number of at least 1, got ${values.blocks}`)

/** Resolves once the tracker counts `want` complete peers (seeders) of the torrent. */
async function untilSeeders(tracker: Tracker, infoHash: string, want: number, timeoutMs: number): Promise<void> {
  const percent = [...Buffer.from(infoHash, 'hex')].map((b) => `%${b.toString(16).padStart(2, '0')}`)
  const query = `info_hash=${percent.join('')}`
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const body = Buffer.from(await (await fetch(`${tracker.url}/scrape?${query}`)).arrayBuffer()).toString('latin1')
    if (Number(/8:completei(\d+)e/.exec(body)?.[1] ?? 0) >= want) return
    if (Date.now() > deadline) throw new Error(`the tracker counted fewer than ${want} seeders within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** Our client, as a host fetches: every artifact, BitTorrent's piece checks and the manifest's sha256. */
async function fetchWithStore(manifest: Manifest, torrent: Buffer, dataDir: string): Promise<Record<string, number>> {
  const store = new ArtifactStore({ dataDir, torrentHost: '127.0.0.1' })
  let peers = 0
  try {
    const m = await measured(() =>
      store.fetch(
        manifest,
        torrent,
        manifest.artifacts.map((a) => a.file),
        (p) => {
          peers = Math.max(peers, p.peers)
        },
      ),
    )
    return { ...m, peers }
  } finally {
    await store.close()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const source = await benchModel('q8_0', { ...LLAMA_1B, blocks: BLOCKS })
const packed = join(BENCH_DIR, BLOCKS === LLAMA_1B.blocks ? 'packed-llama-1b-q8_0' : `packed-llama-${BLOCKS}x2048-q8_0`)
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const bytes = manifest.artifacts.reduce((s, a) => s + a.bytes, 0)
const mb = bytes / 1e6
const gb = bytes / 1e9
const work = await mkdtemp(join(BENCH_DIR, 'torrent-'))
const tracker = await Tracker.start({ dbPath: ':memory:' })
// The aria2c seeders' swarm: the same torrent (same infohash) announced
// to a tracker of its own, so its leechers meet no other seeder.
const ariaTracker = HAVE_ARIA2C ? await Tracker.start({ dbPath: ':memory:' }) : undefined
const seeders: NeuronProcess[] = []
const ariaSeeders: ChildProcess[] = []
try {
  const torrent = await createModelTorrent(packed, manifest, [tracker.announceUrl])
  const torrentFile = join(work, 'ours.torrent')
  await writeFile(torrentFile, torrent)
  // Two seeding hosts, each its own process as on a real swarm (`neuron publish` seeds what it publishes).
  // They share one key: a published model is republished only by its publisher, as after a restart.
  await NodeIdentity.loadOrCreate(join(work, 'seeder-a'))
  await mkdir(join(work, 'seeder-b'))
  await copyFile(join(work, 'seeder-a', 'identity.pem'), join(work, 'seeder-b', 'identity.pem'))
  for (const name of ['seeder-a', 'seeder-b']) {
    const seeder = startNeuron(['publish', packed, '--tracker', tracker.url, '--data-dir', join(work, name)])
    seeders.push(seeder)
    const [, infoHash] = (await seeder.waitFor(/infohash ([0-9a-f]{40})/, 300_000)) as RegExpMatchArray
    if (name === 'seeder-b') await untilSeeders(tracker, infoHash ?? '', 2, 30_000)
  }
  let ariaTorrent: Buffer | undefined
  if (ariaTracker !== undefined) {
    ariaTorrent = await createModelTorrent(packed, manifest, [ariaTracker.announceUrl])
    const ariaTorrentFile = join(work, 'aria.torrent')
    await writeFile(ariaTorrentFile, ariaTorrent)
    for (const [i, name] of ['seeder-a', 'seeder-b'].entries()) {
      ariaSeeders.push(aria2cSeed(ariaTorrentFile, join(work, name, 'publisher', 'models'), 46_881 + i))
    }
    const infoHash = seeders[0]?.output().match(/infohash ([0-9a-f]{40})/)?.[1] ?? ''
    await untilSeeders(ariaTracker, infoHash, 2, 120_000)
  }
  // Warm the page cache for every side.
  spawnSync(
    'cat',
    manifest.artifacts.map((a) => join(packed, a.file)),
    { stdio: 'ignore' },
  )

  const sides: Record<string, () => Promise<Record<string, number>>> = {
    cp: async () => {
      const out = join(work, 'copy')
      const seconds = await timed(() => {
        const cp = spawnSync('cp', ['-r', packed, out])
        if (cp.status !== 0) throw new Error(`cp failed: ${cp.stderr}`)
      })
      await rm(out, { recursive: true, force: true })
      return { seconds }
    },
    'bittorrent (2 seeders, sha256 checked)': () => fetchWithStore(manifest, torrent, join(work, 'leecher')),
  }
  if (ariaTorrent !== undefined) {
    const fromAria = ariaTorrent
    sides['aria2c from our 2 seeders'] = async () => {
      const out = join(work, 'aria-leecher')
      let cpuSeconds = Number.NaN
      const seconds = await timed(async () => {
        cpuSeconds = (await aria2cDownload(torrentFile, out)).cpuSeconds
      })
      // The same work our side does after BitTorrent's own checks: the manifest's sha256 of every artifact.
      const sha256 = await measured(async () => {
        for (const a of manifest.artifacts) await verifyArtifact(join(out, manifest.modelId, a.file), a)
      })
      await rm(out, { recursive: true, force: true })
      return {
        seconds,
        cpu_s: cpuSeconds,
        sha256_seconds: sha256.seconds,
        sha256_cpu_s: sha256.cpu_s,
        checked_seconds: seconds + sha256.seconds,
        checked_cpu_s: cpuSeconds + sha256.cpu_s,
      }
    }
    sides['ours from 2 aria2c seeders'] = () => fetchWithStore(manifest, fromAria, join(work, 'leecher-from-aria'))
  }

  const results: Record<string, Record<string, number>[]> = Object.fromEntries(Object.keys(sides).map((s) => [s, []]))
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? Object.keys(sides) : Object.keys(sides).reverse()
    for (const tool of order) {
      const m = await (sides[tool] as () => Promise<Record<string, number>>)()
      results[tool]?.push(m)
      const perGb = Object.fromEntries(
        Object.entries(m)
          .filter(([k]) => k.endsWith('cpu_s'))
          .map(([k, v]) => [`${k}_per_gb`, v / gb]),
      )
      console.log(
        JSON.stringify({
          round,
          tool,
          ...m,
          ...perGb,
          mb_s: mb / (m.seconds ?? Number.NaN),
          load_average: loadavg()[0],
        }),
      )
    }
  }
  const medianOf = (tool: string, key = 'seconds') => median((results[tool] ?? []).map((m) => m[key] ?? Number.NaN))
  const cpSeconds = medianOf('cp')
  const ours = 'bittorrent (2 seeders, sha256 checked)'
  const seconds = medianOf(ours)
  const oursCpu = medianOf(ours, 'cpu_s') / gb
  const aria = HAVE_ARIA2C
    ? {
        aria2c_download_mb_s: mb / medianOf('aria2c from our 2 seeders'),
        aria2c_download_sha256_checked_mb_s: mb / medianOf('aria2c from our 2 seeders', 'checked_seconds'),
        torrent_from_aria2c_seeders_mb_s: mb / medianOf('ours from 2 aria2c seeders'),
        aria2c_cpu_s_per_gb: medianOf('aria2c from our 2 seeders', 'cpu_s') / gb,
        aria2c_sha256_checked_cpu_s_per_gb: medianOf('aria2c from our 2 seeders', 'checked_cpu_s') / gb,
        torrent_from_aria2c_seeders_cpu_s_per_gb: medianOf('ours from 2 aria2c seeders', 'cpu_s') / gb,
        // Ours (sha256 checked) against aria2c with the same sha256 check after it: above 1, ours costs more.
        torrent_vs_aria2c_checked_cpu_ratio: oursCpu / (medianOf('aria2c from our 2 seeders', 'checked_cpu_s') / gb),
      }
    : { aria2c: 'not installed (apt-get install aria2 time)' }
  console.log(
    JSON.stringify({
      bench: 'torrent',
      bytes,
      artifacts: manifest.artifacts.length,
      seeders: 2,
      rounds: ROUNDS,
      cp_mb_s: mb / cpSeconds,
      torrent_mb_s: mb / seconds,
      torrent_vs_cp_ratio: cpSeconds / seconds,
      torrent_cpu_s_per_gb: oursCpu,
      torrent_main_thread_cpu_s_per_gb: medianOf(ours, 'main_thread_cpu_s') / gb,
      // The rate at which our main thread would be busy all the time: one core fills 1 Gbit/s when it is 125 or more.
      torrent_main_thread_bound_mb_s: mb / medianOf(ours, 'main_thread_cpu_s'),
      ...aria,
      load_average: loadavg()[0],
    }),
  )
} finally {
  for (const a of ariaSeeders) a.kill()
  await Promise.all(seeders.map((s) => s.stop()))
  await ariaTracker?.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
