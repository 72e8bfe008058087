import { execFile, spawnSync } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../test/programs'
import { type Publication, publishModel } from '../publish'
import { verifyArtifact } from './verify-artifact'

// Debian's aria2c, a BitTorrent client that shares no code with ours: what it fetches by the
// public magnet link or .torrent, any client can.
const HAVE_ARIA2C = spawnSync('aria2c', ['--version']).status === 0
const NEEDS_ARIA2C = HAVE_ARIA2C ? '' : ' (skipped: aria2c is not installed; apt-get install aria2)'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let publication: Publication

/** Runs aria2c on loopback only (no DHT, no local peer discovery, no peer exchange) until it has the file. */
function aria2c(source: string, out: string, fileIndex: number): Promise<void> {
  const args = [
    source,
    `--dir=${out}`,
    `--select-file=${fileIndex}`,
    `--bt-tracker=${tracker.announceUrl}`,
    '--interface=127.0.0.1',
    '--enable-dht=false',
    '--enable-dht6=false',
    '--bt-enable-lpd=false',
    '--enable-peer-exchange=false',
    '--disable-ipv6=true',
    '--async-dns=false',
    '--seed-time=0',
    '--bt-save-metadata=false',
    '--bt-stop-timeout=30',
    '--follow-torrent=mem',
    '--file-allocation=none',
    '--no-conf=true',
    '--summary-interval=0',
    '--console-log-level=warn',
  ]
  return new Promise((resolve, reject) => {
    execFile('aria2c', args, { timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`aria2c ${source} failed (${error.message}):\n${stdout}\n${stderr}`)) : resolve(),
    )
  })
}

describe.skipIf(!HAVE_ARIA2C)(`any BitTorrent client fetches a published artifact${NEEDS_ARIA2C}`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({ dbPath: ':memory:' })
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    publication = await publishModel(
      join(dir, 'packed'),
      tracker.url,
      NodeIdentity.generate(),
      join(dir, 'publisher'),
      { torrentHost: '127.0.0.1' },
    )
    expect((await publication.store.torrentAddress()).address).toBe('127.0.0.1')
  })
  afterAll(async () => {
    await publication?.close()
    await tracker?.close()
    await cleanup()
  })

  it(
    'aria2c downloads one artifact by the magnet link from ' + 'GET /models/:id, and its sha256 is the manifest’s',
    async () => {
      const { magnet } = (await (await fetch(`${tracker.url}/models/${manifest.modelId}`)).json()) as { magnet: string }
      const index = manifest.artifacts.findIndex((a) => a.role === 'blocks')
      const artifact = manifest.artifacts[index]
      if (artifact === undefined) throw new Error('the pack has no blocks artifact')
      await aria2c(magnet, join(dir, 'by-magnet'), index + 1)
      await verifyArtifact(join(dir, 'by-magnet', manifest.modelId, artifact.file), artifact)
      // Artifacts end on piece boundaries, so selecting one file fetches no byte of the others.
      expect(await readdir(join(dir, 'by-magnet', manifest.modelId))).toEqual([artifact.file])
    },
  )

  it(
    'aria2c downloads one artifact by the .torrent from GET ' + '/models/:id.torrent, and its sha256 is the manifest’s',
    async () => {
      const index = manifest.artifacts.findIndex((a) => a.role === 'head')
      const artifact = manifest.artifacts[index]
      if (artifact === undefined) throw new Error('the pack has no head artifact')
      await aria2c(`${tracker.url}/models/${manifest.modelId}.torrent`, join(dir, 'by-torrent'), index + 1)
      await verifyArtifact(join(dir, 'by-torrent', manifest.modelId, artifact.file), artifact)
      expect(await readdir(join(dir, 'by-torrent', manifest.modelId))).toEqual([artifact.file])
    },
  )
})
