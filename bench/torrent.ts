// npm run bench:torrent — fetching a ~1 GB artifact set over BitTorrent from two seeding hosts
// (separate processes) on loopback, sha256 checks included, against `cp` of the same bytes, same run.
// Prints one JSON line per measurement; the last line holds the ratio.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { packModel } from '../gguf/pack'
import { ArtifactStore } from '../host/artifacts/artifact-store'
import { createModelTorrent } from '../host/artifacts/model-torrent'
import { readManifest } from '../host/publish'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { Tracker } from '../tracker/server'
import { BENCH_DIR, benchModel } from './models'

const source = await benchModel('q8_0')
const packed = join(BENCH_DIR, 'packed-llama-1b-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const bytes = manifest.artifacts.reduce((s, a) => s + a.bytes, 0)
const work = await mkdtemp(join(BENCH_DIR, 'torrent-'))
const tracker = await Tracker.start({ dbPath: ':memory:' })
const stores: ArtifactStore[] = []
const seeders: NeuronProcess[] = []
try {
  const torrent = await createModelTorrent(packed, manifest, [tracker.announceUrl])
  // Two seeding hosts, each its own process as on a real swarm (`neuron publish` seeds what it publishes).
  for (const name of ['seeder-a', 'seeder-b']) {
    const seeder = startNeuron(['publish', packed, '--tracker', tracker.url, '--data-dir', join(work, name)])
    seeders.push(seeder)
    await seeder.waitFor(/seeding/, 120_000)
  }
  // Warm the page cache for both sides.
  spawnSync(
    'cat',
    manifest.artifacts.map((a) => join(packed, a.file)),
    { stdio: 'ignore' },
  )

  const cpStarted = performance.now()
  const cp = spawnSync('cp', ['-r', packed, join(work, 'copy')])
  if (cp.status !== 0) throw new Error(`cp failed: ${cp.stderr}`)
  const cpSeconds = (performance.now() - cpStarted) / 1000
  console.log(JSON.stringify({ tool: 'cp', seconds: cpSeconds, mb_s: bytes / 1e6 / cpSeconds }))

  const leecher = new ArtifactStore({ dataDir: join(work, 'leecher') })
  stores.push(leecher)
  let peers = 0
  const started = performance.now()
  await leecher.fetch(
    manifest,
    torrent,
    manifest.artifacts.map((a) => a.file),
    (p) => {
      peers = Math.max(peers, p.peers)
    },
  )
  const seconds = (performance.now() - started) / 1000
  console.log(JSON.stringify({ tool: 'bittorrent (2 seeders, sha256 checked)', seconds, mb_s: bytes / 1e6 / seconds, peers }))
  console.log(
    JSON.stringify({
      bench: 'torrent',
      bytes,
      artifacts: manifest.artifacts.length,
      seeders: 2,
      cp_mb_s: bytes / 1e6 / cpSeconds,
      torrent_mb_s: bytes / 1e6 / seconds,
      torrent_vs_cp_ratio: cpSeconds / seconds,
    }),
  )
} finally {
  await Promise.all(stores.map((s) => s.close()))
  await Promise.all(seeders.map((s) => s.stop()))
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
