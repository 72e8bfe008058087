// The dependencies with install quirks on this machine (see README), checked working: later
// issues build on them, and a broken `npm ci` should fail here first, with a clear name.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Server as TrackerServer } from 'bittorrent-tracker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebTorrent from 'webtorrent'
import { scratchDir } from './models'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('dependencies with install quirks', () => {
  it('better-sqlite3 12 keeps rows in a real SQLite file across connections', () => {
    const path = join(dir, 'ledger.sqlite')
    const a = new Database(path)
    a.exec('create table entries (id integer primary key, amount integer not null)')
    a.prepare('insert into entries (amount) values (?)').run(42)
    a.close()
    const b = new Database(path, { readonly: true })
    expect(b.prepare('select amount from entries').get()).toEqual({ amount: 42 })
    b.close()
  })

  it('electron installs as a package without downloading its binary (allowScripts)', () => {
    const require = createRequire(import.meta.url)
    const pkg = require('electron/package.json') as { version: string }
    expect(pkg.version).toMatch(/^\d+\./)
    // The binary is fetched by a postinstall we deliberately block; npm start falls back to the browser UI.
    expect(existsSync(join(require.resolve('electron/package.json'), '..', 'path.txt'))).toBe(false)
  })

  it('webtorrent moves a file between two clients over TCP on loopback, with no WebRTC', async () => {
    const tracker = new TrackerServer({ udp: false, ws: false, http: true, stats: false })
    await new Promise<void>((resolve) => tracker.listen(0, '127.0.0.1', resolve))
    const port = (tracker.http?.address() as { port: number } | undefined)?.port
    const announce = [`http://127.0.0.1:${port}/announce`]
    const options = {
      dht: false,
      lsd: false,
      utp: false,
      webSeeds: false,
      natUpnp: false,
      natPmp: false,
      tracker: { announce },
    } as const
    const seeder = new WebTorrent(options)
    const leecher = new WebTorrent(options)
    try {
      const content = randomBytes(3 * 1024 * 1024 + 123)
      await mkdir(join(dir, 'seed'))
      await writeFile(join(dir, 'seed', 'artifact.bin'), content)
      const seeded = await new Promise<WebTorrent.Torrent>((resolve) =>
        seeder.seed(join(dir, 'seed', 'artifact.bin'), { announce }, resolve),
      )
      const got = await new Promise<WebTorrent.Torrent>((resolve, reject) => {
        const t = leecher.add(seeded.torrentFile, { path: join(dir, 'leech'), announce })
        t.on('done', () => resolve(t))
        t.on('error', reject)
      })
      expect(got.infoHash).toBe(seeded.infoHash)
      expect((await readFile(join(dir, 'leech', 'artifact.bin'))).equals(content)).toBe(true)
      expect('RTCPeerConnection' in globalThis).toBe(false)
    } finally {
      await Promise.all([seeder, leecher].map((c) => new Promise<void>((resolve) => c.destroy(() => resolve()))))
      await new Promise<void>((resolve) => tracker.close(() => resolve()))
    }
  })
})
