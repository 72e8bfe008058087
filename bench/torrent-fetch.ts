// One fetch by our client, as a host fetches (BitTorrent's piece checks and the manifest's sha256), run as a
// child process where bench:torrent-wan puts it (a home behind NAT): prints one JSON line with its wall seconds
// and CPU-seconds (all threads, main thread), measured around the fetch alone.
// Usage: node --import tsx bench/torrent-fetch.ts PACKED_DIR TORRENT_FILE DATA_DIR
import { readFile, rm } from 'node:fs/promises'
import { ArtifactStore } from '../host/artifacts/artifact-store'
import { readManifest } from '../host/publish'
import { measured } from './cpu-use'

const [packed = '', torrentFile = '', dataDir = ''] = process.argv.slice(2)
if (dataDir === '') throw new Error('usage: torrent-fetch.ts PACKED_DIR TORRENT_FILE DATA_DIR')
const manifest = await readManifest(packed)
const torrent = await readFile(torrentFile)
const store = new ArtifactStore({ dataDir })
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
  process.stdout.write(`${JSON.stringify({ ...m, peers })}\n`)
} finally {
  await store.close()
  await rm(dataDir, { recursive: true, force: true })
}
