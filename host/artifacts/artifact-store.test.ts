import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { open, readdir, readFile, writeFile } from 'node:fs/promises'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import type { Manifest } from '../../protocol'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../test/programs'
import { ArtifactStore } from './artifact-store'
import { createModelTorrent } from './model-torrent'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let torrent: Buffer
const stores: ArtifactStore[] = []

function artifact(file: string) {
  const a = manifest.artifacts.find((x) => x.file === file)
  if (a === undefined) throw new Error(`no ${file}`)
  return a
}

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex')
}

async function flipByte(path: string, at: number): Promise<void> {
  const fh = await open(path, 'r+')
  const byte = Buffer.alloc(1)
  await fh.read(byte, 0, 1, at)
  await fh.write(Buffer.from([(byte[0] ?? 0) ^ 0xff]), 0, 1, at)
  await fh.close()
}

function store(name: string, quotaBytes?: number): ArtifactStore {
  const s = new ArtifactStore({ dataDir: join(dir, name), ...(quotaBytes === undefined ? {} : { quotaBytes }) })
  stores.push(s)
  return s
}

describe(`artifact store over BitTorrent on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({ dbPath: ':memory:' })
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    torrent = await createModelTorrent(join(dir, 'packed'), manifest, [tracker.announceUrl])
  })
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()))
    await tracker?.close()
    await cleanup()
  })

  it('a host fetches only the artifacts of its range, verified, and seeds them on', async () => {
    await store('publisher').seedDirectory(join(dir, 'packed'), manifest, torrent)
    const host = store('host-a')
    const wanted = ['embed.gguf', 'blocks-0-2.gguf']
    const progress: number[] = []
    const paths = await host.fetch(manifest, torrent, wanted, (p) => progress.push(p.downloadedBytes))
    expect(paths).toEqual(wanted.map((f) => host.pathOf(manifest.modelId, f)))
    expect((await readdir(join(dir, 'host-a', 'models', manifest.modelId))).sort()).toEqual(wanted.sort())
    for (const f of wanted) expect(await sha256(host.pathOf(manifest.modelId, f))).toBe(artifact(f).sha256)
    expect(progress.length).toBeGreaterThan(0)

    // A second host gets embed.gguf from either peer; host-a now seeds too.
    const other = store('host-b')
    await other.fetch(manifest, torrent, ['embed.gguf', 'head.gguf'])
    expect((await readdir(join(dir, 'host-b', 'models', manifest.modelId))).sort()).toEqual(['embed.gguf', 'head.gguf'])
  })

  it('a corrupted byte on a seeder is refused, and the file comes from another peer', async () => {
    // host-a and the publisher both seed blocks-0-2.gguf; corrupt host-a's copy under its feet.
    await flipByte(join(dir, 'host-a', 'models', manifest.modelId, 'blocks-0-2.gguf'), 70_000)
    const host = store('host-c')
    const [path] = await host.fetch(manifest, torrent, ['blocks-0-2.gguf'])
    expect(await sha256(path as string)).toBe(artifact('blocks-0-2.gguf').sha256)
  })

  it(
    'a file corrupted on disk after download fails the ' + 'sha256 check, is never returned, and is fetched again',
    async () => {
      const logs: string[] = []
      const host = new ArtifactStore({ dataDir: join(dir, 'host-d'), log: (l) => logs.push(l) })
      stores.push(host)
      const [path] = await host.fetch(manifest, torrent, ['blocks-2-4.gguf'])
      await flipByte(path as string, 100_000)
      const [again] = await host.fetch(manifest, torrent, ['blocks-2-4.gguf'])
      expect(logs.join('\n')).toMatch(
        /blocks-2-4\.gguf failed sha256 \(expected [0-9a-f]{12}…, got [0-9a-f]{12}…\); re-downloading/,
      )
      expect(await sha256(again as string)).toBe(artifact('blocks-2-4.gguf').sha256)
    },
  )

  it(
    'refuses a file whose every piece passes its SHA-1 but ' + 'whose sha256 is not the manifest’s, naming the file',
    async () => {
      const logs: string[] = []
      const host = new ArtifactStore({ dataDir: join(dir, 'host-lied-to'), log: (l) => logs.push(l) })
      stores.push(host)
      // The torrent is the true one; the manifest the host was given says another sha256 for head.gguf.
      const truth = artifact('head.gguf').sha256
      const lying: Manifest = {
        ...manifest,
        artifacts: manifest.artifacts.map((a) => (a.file === 'head.gguf' ? { ...a, sha256: '0'.repeat(64) } : a)),
      }
      await expect(host.fetch(lying, torrent, ['head.gguf'])).rejects.toMatchObject({
        code: 'artifact_corrupt',
        message: expect.stringMatching(/head\.gguf failed sha256 3 times/),
      })
      const refusals = logs.filter((l) => l.includes('failed sha256'))
      expect(refusals).toHaveLength(3)
      // Each time, the digest came from the pieces as stored (on a worker),
      // not from reading the file back, and was the file's true one.
      for (const l of refusals)
        expect(l).toContain(`artifact head.gguf failed sha256 (expected 000000000000…, got ${truth.slice(0, 12)}…)`)
      expect(logs.join('\n')).not.toMatch(/checking its sha256 on disk/)
    },
  )

  it('ends its sha256 workers when it closes: a process that fetched and closed its store exits', async () => {
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest))
    await writeFile(join(dir, 'model.torrent'), torrent)
    const script = `
      import { readFile } from 'node:fs/promises'
      import { ArtifactStore } from ${JSON.stringify(join(REPO_ROOT, 'host/artifacts/artifact-store.ts'))}
      const dir = process.env.FIXTURE_DIR
      const store = new ArtifactStore({ dataDir: dir + '/host-exits', log: console.error })
      const manifest = JSON.parse(await readFile(dir + '/manifest.json', 'utf8'))
      await store.fetch(manifest, await readFile(dir + '/model.torrent'), ['embed.gguf', 'head.gguf'])
      await store.close()
      console.log('closed')
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, FIXTURE_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString()
    })
    child.stderr.on('data', (b: Buffer) => {
      out += b.toString()
    })
    // Nothing left open may keep it alive: it must exit on its own, soon after it closed the store.
    const code = await new Promise<number | string>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve('still running 20 s after it started')
      }, 20_000)
      child.once('exit', (c) => {
        clearTimeout(timer)
        resolve(c ?? 'killed')
      })
    })
    expect(out).toContain('closed')
    // The digests came from the workers (a failed worker would mean reading the files back).
    expect(out).not.toMatch(/sha256 worker failed|checking its sha256 on disk/)
    expect(code).toBe(0)
  }, 30_000)

  it('resumes after a restart from what is on disk, with no seeder left to ask', async () => {
    const first = new ArtifactStore({ dataDir: join(dir, 'host-resume') })
    await first.fetch(manifest, torrent, ['head.gguf'])
    await first.close()
    // Every other peer gone: a tracker that knows no one.
    const lonely = await Tracker.start({ dbPath: ':memory:' })
    try {
      const alone = await createModelTorrent(join(dir, 'packed'), manifest, [lonely.announceUrl])
      const again = store('host-resume')
      const [path] = await again.fetch(manifest, alone, ['head.gguf'])
      expect(await sha256(path as string)).toBe(artifact('head.gguf').sha256)
    } finally {
      await lonely.close()
    }
  })

  it('refuses a range that does not fit the disk quota, before downloading', async () => {
    const tiny = store('host-small', 1000)
    await expect(tiny.fetch(manifest, torrent, ['blocks-0-2.gguf'])).rejects.toMatchObject({
      code: 'disk_quota',
      message: expect.stringMatching(/disk quota is 1000 bytes/),
    })
    await expect(readdir(join(dir, 'host-small', 'models'))).rejects.toThrow()
  })

  it('binds its BitTorrent port where its options say, and peers fetch from it there', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo
        probe.close(() => resolve(port))
      })
    })
    // A tracker only this seeder announces to: whatever a peer gets, it gets from there.
    const lonely = await Tracker.start({ dbPath: ':memory:' })
    try {
      const alone = await createModelTorrent(join(dir, 'packed'), manifest, [lonely.announceUrl])
      const seeder = new ArtifactStore({ dataDir: join(dir, 'bound'), torrentPort: port, torrentHost: '127.0.0.1' })
      stores.push(seeder)
      await seeder.seedDirectory(join(dir, 'packed'), manifest, alone)
      expect(await seeder.torrentAddress()).toMatchObject({ address: '127.0.0.1', port })
      const [path] = await store('from-bound').fetch(manifest, alone, ['head.gguf'])
      expect(await sha256(path as string)).toBe(artifact('head.gguf').sha256)
    } finally {
      await lonely.close()
    }
  })
})
