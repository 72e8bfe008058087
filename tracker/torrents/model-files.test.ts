import { join } from 'node:path'
import parseTorrent from 'parse-torrent'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import { ClientToTracker, callRpc, type Manifest } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { packForPublish } from '../../test/programs'
import { Tracker } from '../server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let infoHash = ''

/** Every byte as %XX, the way BitTorrent clients send binary query values. */
const percent = (bytes: Uint8Array) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')

describe(`a model's torrent is public over plain HTTP`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({ dbPath: ':memory:' })
    const files = await packForPublish(tracker, STORIES_260K, join(dir, 'stories'))
    manifest = files.manifest
    const socket = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
    ;({ infoHash } = await callRpc(socket, ClientToTracker, 'model.publish', files))
    socket.close()
  })
  afterAll(async () => {
    await tracker?.close()
    await cleanup()
  })

  it('GET /models/:id.torrent serves the torrent whose infohash is the catalog’s', async () => {
    const res = await fetch(`${tracker.url}/models/${manifest.modelId}.torrent`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/x-bittorrent')
    const parsed = (await parseTorrent(Buffer.from(await res.arrayBuffer()))) as {
      infoHash?: string
      announce?: string[]
    }
    expect(parsed.infoHash).toBe(infoHash)
    expect(parsed.announce).toEqual([tracker.announceUrl])
  })

  it('GET /models/:id gives the magnet link (infohash, name, tracker), the torrent path and the manifest', async () => {
    const res = await fetch(`${tracker.url}/models/${manifest.modelId}`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      modelId: string
      infoHash: string
      magnet: string
      torrent: string
      manifest: Manifest
    }
    expect(body).toMatchObject({
      modelId: manifest.modelId,
      infoHash,
      torrent: `/models/${manifest.modelId}.torrent`,
      manifest,
    })
    const magnet = new URL(body.magnet)
    expect(magnet.protocol).toBe('magnet:')
    expect(magnet.searchParams.get('xt')).toBe(`urn:btih:${infoHash}`)
    expect(magnet.searchParams.get('dn')).toBe(manifest.modelId)
    expect(magnet.searchParams.getAll('tr')).toEqual([tracker.announceUrl])
  })

  it('answers an unknown model with 404 and what it knows, a malformed id with 400', async () => {
    const unknown = await fetch(`${tracker.url}/models/nope.torrent`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({
      error: { code: 'unknown_model', message: expect.stringContaining(manifest.modelId) },
    })
    const bad = await fetch(`${tracker.url}/models/%2e%2e%2fetc`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'bad_request' } })
  })

  it('/scrape answers per BEP 48: files keyed by the 20-byte binary infohash', async () => {
    const hash = Buffer.from(infoHash, 'hex')
    // A seeder announces itself first, so there is a count to see.
    const peerId = Buffer.from('-XX0001-abcdefghijkl')
    const announce = await fetch(
      `${tracker.announceUrl}?info_hash=${percent(hash)}&peer_id=${percent(peerId)}` +
        '&port=6881&left=0&event=started&compact=1',
    )
    expect(announce.status).toBe(200)
    const res = await fetch(`${tracker.url}/scrape?info_hash=${percent(hash)}`)
    expect(res.status).toBe(200)
    const body = Buffer.from(await res.arrayBuffer())
    expect(hash.some((b) => b >= 0x80)).toBe(true) // bytes a UTF-8 encoder would mangle
    const entry = Buffer.concat([
      Buffer.from('d5:filesd20:'),
      hash,
      Buffer.from('d8:completei1e10:downloadedi1e10:incompletei0eee'),
    ])
    expect(body.subarray(0, entry.length).toString('hex')).toBe(entry.toString('hex'))
    // A hash of the wrong length is a failure reason, not a crash.
    const wrong = await fetch(`${tracker.url}/scrape?info_hash=${percent(hash.subarray(0, 5))}`)
    expect(Buffer.from(await wrong.arrayBuffer()).toString('latin1')).toMatch(/^d14:failure reason\d+:.*20 bytes/)
  })
})
