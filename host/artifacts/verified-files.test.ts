import { appendFile, open, readFile, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebTorrent from 'webtorrent'
import { packModel } from '../../gguf/pack'
import { sha256File } from '../../gguf/source-hash'
import type { Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../test/programs'
import { ArtifactStore } from './artifact-store'
import { createModelTorrent } from './model-torrent'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let torrent: Buffer
const stores: ArtifactStore[] = []

/** A store over `<dir>/<name>` and the lines it logs. */
function store(name: string, verifiedRecord?: boolean): { store: ArtifactStore; logs: string[] } {
  const logs: string[] = []
  const s = new ArtifactStore({
    dataDir: join(dir, name),
    log: (l) => logs.push(l),
    ...(verifiedRecord === undefined ? {} : { verifiedRecord }),
  })
  stores.push(s)
  return { store: s, logs }
}

/** Fetches `files` into a fresh store over `name`, then closes it, as a host that stops. */
async function fetchAndStop(name: string, files: string[]): Promise<void> {
  const { store: s } = store(name)
  await s.fetch(manifest, torrent, files)
  await s.close()
}

function pathOf(name: string, file: string): string {
  return join(dir, name, 'models', manifest.modelId, file)
}

function piecesOf(...files: string[]): number {
  return files.reduce((n, f) => n + (manifest.artifacts.find((a) => a.file === f)?.bytes ?? 0) / manifest.pieceBytes, 0)
}

async function sha256(path: string): Promise<string> {
  return (await sha256File(path)).sha256
}

function expected(file: string): string | undefined {
  return manifest.artifacts.find((a) => a.file === file)?.sha256
}

/** The startup line: pieces taken from the record, and pieces webtorrent hashed on disk. */
function startup(logs: string[]): { taken: number; hashed: number } {
  const m = logs
    .join('\n')
    .match(/(\d+) pieces on disk taken from the record of verified files, (\d+) found intact by hashing them/)
  return { taken: Number(m?.[1] ?? 0), hashed: Number(m?.[2] ?? 0) }
}

const sha256Checks = (logs: string[]) =>
  logs
    .map((l) => l.match(/^(.+): checking its sha256 on disk$/)?.[1])
    .filter((f) => f !== undefined)
    .sort()

async function flipByte(path: string, at: number): Promise<void> {
  const fh = await open(path, 'r+')
  const byte = Buffer.alloc(1)
  await fh.read(byte, 0, 1, at)
  await fh.write(Buffer.from([(byte[0] ?? 0) ^ 0xff]), 0, 1, at)
  await fh.close()
}

describe(`a restarted host trusts the files it verified before, and only those`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({ dbPath: ':memory:' })
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    torrent = await createModelTorrent(join(dir, 'packed'), manifest, [tracker.announceUrl])
    await store('publisher').store.seedDirectory(join(dir, 'packed'), manifest, torrent)
  })
  afterAll(async () => {
    // most were closed already, as a stopping host closes its store
    await Promise.all(stores.map((s) => s.close().catch(() => {})))
    await tracker?.close()
    await cleanup()
  })

  it(
    'hashes neither the sha256 nor the pieces of unchanged ' + 'files again, and hands out the same verified files',
    async () => {
      const files = ['embed.gguf', 'blocks-0-2.gguf']
      await fetchAndStop('restart', files)

      const { store: again, logs } = store('restart')
      const paths = await again.fetch(manifest, torrent, files)
      await again.close()
      expect(sha256Checks(logs)).toEqual([])
      // webtorrent still spot-checks one piece per file it is told it has
      expect(startup(logs).taken).toBe(piecesOf(...files))
      expect(startup(logs).hashed).toBeLessThanOrEqual(files.length)
      for (const [i, f] of files.entries()) expect(await sha256(paths[i] as string)).toBe(expected(f))

      // The baseline, without the record: every file read back and every piece hashed.
      const { store: baseline, logs: baseLogs } = store('restart', false)
      await baseline.fetch(manifest, torrent, files)
      await baseline.close()
      expect(sha256Checks(baseLogs)).toEqual([...files].sort())
      expect(startup(baseLogs)).toEqual({ taken: 0, hashed: piecesOf(...files) })
    },
  )

  it(
    'catches a byte changed in place with its size and mtime ' + 'put back (by its ctime), and fetches the piece again',
    async () => {
      const file = 'blocks-0-2.gguf'
      const path = pathOf('ctime', file)
      await fetchAndStop('ctime', ['embed.gguf', file])
      // A whole-second mtime, so utimes can put it back exactly; the restart records the file with it.
      const when = new Date('2026-02-01T00:00:00Z')
      await utimes(path, when, when)
      const { store: first, logs: firstLogs } = store('ctime')
      await first.fetch(manifest, torrent, ['embed.gguf', file])
      await first.close()
      expect(sha256Checks(firstLogs)).toEqual([file])
      const recorded = await stat(path, { bigint: true })

      await flipByte(path, 70_000)
      await utimes(path, when, when)
      const touched = await stat(path, { bigint: true })
      expect({ size: touched.size, mtimeNs: touched.mtimeNs, ino: touched.ino }).toEqual({
        size: recorded.size,
        mtimeNs: recorded.mtimeNs,
        ino: recorded.ino,
      })
      expect(touched.ctimeNs).not.toBe(recorded.ctimeNs)

      const { store: again, logs } = store('ctime')
      const [, fixed] = await again.fetch(manifest, torrent, ['embed.gguf', file])
      await again.close()
      expect(await sha256(fixed as string)).toBe(expected(file))
      expect(sha256Checks(logs)).toEqual([file])
    },
  )

  it('checks again a file whose mtime changed, and refuses and fetches again one whose size changed', async () => {
    const files = ['blocks-2-4.gguf', 'head.gguf']
    await fetchAndStop('changed', files)
    const later = new Date('2026-03-01T00:00:00Z')
    await utimes(pathOf('changed', 'head.gguf'), later, later)
    await appendFile(pathOf('changed', 'blocks-2-4.gguf'), Buffer.from('trailing bytes'))

    const { store: again, logs } = store('changed')
    const paths = await again.fetch(manifest, torrent, files)
    await again.close()
    expect(logs.join('\n')).toMatch(/artifact blocks-2-4\.gguf is \d+ bytes, expected \d+ bytes/)
    expect(sha256Checks(logs)).toContain('head.gguf')
    for (const [i, f] of files.entries()) expect(await sha256(paths[i] as string)).toBe(expected(f))

    // Both checked again are recorded again: the next restart hashes neither.
    const { store: third, logs: thirdLogs } = store('changed')
    await third.fetch(manifest, torrent, files)
    await third.close()
    expect(sha256Checks(thirdLogs)).toEqual([])
  })

  it.each([
    ['garbage', () => Buffer.from('{"format":"neuron-verified/1","files":{"embed.gguf":')],
    ['oversized', () => Buffer.from(`{"format":"neuron-verified/1","files":{}}${' '.repeat(2 << 20)}`)],
    [
      'of another schema',
      () => Buffer.from(JSON.stringify({ format: 'neuron-verified/1', files: { 'embed.gguf': { sha256: 'yes' } } })),
    ],
  ])('ignores a record file that is %s, says so and checks every file again', async (kind, body) => {
    const name = `record-${kind.replace(/ /g, '-')}`
    await fetchAndStop(name, ['embed.gguf'])
    await writeFile(join(dir, name, 'models', `${manifest.modelId}.verified.json`), body())

    const { store: again, logs } = store(name)
    const [path] = await again.fetch(manifest, torrent, ['embed.gguf'])
    await again.close()
    expect(logs.join('\n')).toMatch(
      new RegExp(`ignoring .*${manifest.modelId}\\.verified\\.json \\(.+\\); artifacts on disk are checked again`),
    )
    expect(sha256Checks(logs)).toEqual(['embed.gguf'])
    expect(startup(logs)).toEqual({ taken: 0, hashed: piecesOf('embed.gguf') })
    expect(await sha256(path as string)).toBe(expected('embed.gguf'))
  })

  it(
    'never trusts a well-formed record whose sha256 is ' + 'not the manifest’s, even with the file’s own stat',
    async () => {
      await fetchAndStop('other-sha', ['head.gguf'])
      const recordPath = join(dir, 'other-sha', 'models', `${manifest.modelId}.verified.json`)
      const record = JSON.parse(await readFile(recordPath, 'utf8')) as { files: Record<string, { sha256: string }> }
      const entry = record.files['head.gguf']
      expect(entry?.sha256).toBe(expected('head.gguf'))
      if (entry) entry.sha256 = 'f'.repeat(64)
      await writeFile(recordPath, JSON.stringify(record))

      const { store: again, logs } = store('other-sha')
      await again.fetch(manifest, torrent, ['head.gguf'])
      await again.close()
      expect(sha256Checks(logs)).toEqual(['head.gguf'])
    },
  )

  it('a restarted host holding some files advertises their pieces and no piece of the files it lacks', async () => {
    await fetchAndStop('partial', ['head.gguf'])
    // A tracker only the restarted host announces to: a peer sees its pieces and nobody else's.
    const lonely = await Tracker.start({ dbPath: ':memory:' })
    const leecher = new WebTorrent({
      dht: false,
      lsd: false,
      utp: false,
      webSeeds: false,
      natUpnp: false,
      natPmp: false,
    } as WebTorrent.Options)
    try {
      const alone = await createModelTorrent(join(dir, 'packed'), manifest, [lonely.announceUrl])
      const { store: partial, logs } = store('partial')
      await partial.fetch(manifest, alone, ['head.gguf'])
      expect(startup(logs).taken).toBe(piecesOf('head.gguf'))

      const t = leecher.add(alone, { path: join(dir, 'leecher'), deselect: true } as WebTorrent.TorrentOptions)
      const advertised = await new Promise<boolean[]>((resolve) => {
        t.on('wire', (wire) => {
          const w = wire as unknown as NodeJS.EventEmitter & { peerPieces: { get(i: number): boolean } }
          w.once('bitfield', () =>
            resolve(
              Array.from({ length: piecesOf(...manifest.artifacts.map((a) => a.file)) }, (_, i) => w.peerPieces.get(i)),
            ),
          )
        })
      })
      const at = manifest.artifacts.findIndex((a) => a.file === 'head.gguf')
      const first = piecesOf(...manifest.artifacts.slice(0, at).map((a) => a.file))
      const head = advertised.slice(first, first + piecesOf('head.gguf'))
      expect(head.length).toBeGreaterThan(0)
      expect(head.every(Boolean)).toBe(true)
      expect(advertised.filter(Boolean).length).toBe(head.length)

      // What it advertises, it serves: a host fetching head.gguf gets it from this one peer.
      const [path] = await store('from-partial').store.fetch(manifest, alone, ['head.gguf'])
      expect(await sha256(path as string)).toBe(expected('head.gguf'))
    } finally {
      await new Promise<void>((resolve) => leecher.destroy(() => resolve()))
      await lonely.close()
    }
  })
})
