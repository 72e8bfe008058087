import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { io } from 'socket.io-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../dataplane/tracker-connection'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { NodeIdentity } from '../identity/keys'
import {
  type AuthChallenge,
  ClientToTracker,
  callRpc,
  type HardwareProfile,
  HostToTracker,
  type Manifest,
  type ServingState,
} from '../protocol'
import { STORIES_260K, scratchDir } from '../test/models'
import { readyState, TEST_PROFILE } from '../test/peers'
import { createModelTorrent } from '../test/programs'
import { storeEngines } from '../test/store-engines'
import { Tracker } from './server'

const PROFILE: HardwareProfile = TEST_PROFILE

function serving(manifest: Manifest, blocks: [number, number], status: ServingState['status'] = 'ready'): ServingState {
  return { ...readyState(manifest.modelId, blocks), status }
}

/** A fresh session id: every route.plan names the session it pays for. */
const sid = () => randomBytes(16).toString('hex')

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let torrent: Buffer
let tokenizer: Buffer

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`tracker on loopback on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir())
      const dbPath = (await engine.fresh()).location
      tracker = await Tracker.start({
        dbPath,
        keyPath: join(dir, 'tracker-key.pem'),
        heartbeatMs: 200,
        newKeyGrantMicro: 10_000_000,
      })
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'stories'), blocksPerArtifact: 2 })
      torrent = await createModelTorrent(join(dir, 'stories'), manifest, [tracker.announceUrl])
      tokenizer = await tokenizerGguf(join(dir, 'stories', 'head.gguf'))
    })
    afterAll(async () => {
      await tracker?.close()
      await cleanup()
    })

    it('publishes a model and lists it with its coverage; the same files give the same infohash', async () => {
      const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        const published = await callRpc(client, ClientToTracker, 'model.publish', { manifest, torrent, tokenizer })
        expect(published.modelId).toBe('stories260k')
        const again = await createModelTorrent(join(dir, 'stories'), manifest, [tracker.announceUrl])
        expect(again.equals(torrent)).toBe(true)
        const { models } = await callRpc(client, ClientToTracker, 'models.list', {})
        expect(models).toEqual([
          expect.objectContaining({
            modelId: 'stories260k',
            nLayer: 5,
            infoHash: published.infoHash,
            coverage: [0, 0, 0, 0, 0],
          }),
        ])
        const got = await callRpc(client, ClientToTracker, 'model.get', { modelId: 'stories260k' })
        expect(Buffer.from(got.torrent).equals(torrent)).toBe(true)
        const tok = await callRpc(client, ClientToTracker, 'model.tokenizer', { modelId: 'stories260k' })
        expect(Buffer.from(tok.tokenizer).equals(tokenizer)).toBe(true)
        await expect(callRpc(client, ClientToTracker, 'model.get', { modelId: 'nope' })).rejects.toMatchObject({
          code: 'unknown_model',
          message: expect.stringContaining('stories260k'),
        })
      } finally {
        client.close()
      }
    })

    it('refuses a torrent that does not match its manifest', async () => {
      const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        const other = await createModelTorrent(join(dir, 'stories'), { ...manifest, modelId: 'renamed' }, [
          tracker.announceUrl,
        ])
        await expect(
          callRpc(client, ClientToTracker, 'model.publish', { manifest, torrent: other, tokenizer }),
        ).rejects.toMatchObject({ code: 'bad_torrent' })
      } finally {
        client.close()
      }
    })

    it(
      'routes over ready hosts, and drops a host from ' + 'routing when it disconnects or misses three heartbeats',
      async () => {
        const a = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
        const b = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
        const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
        try {
          const ha = await callRpc(a, HostToTracker, 'host.hello', {
            profile: PROFILE,
            state: serving(manifest, [0, 3]),
          })
          const hb = await callRpc(b, HostToTracker, 'host.hello', {
            profile: PROFILE,
            state: serving(manifest, [3, 5]),
          })
          const route = await callRpc(client, ClientToTracker, 'route.plan', {
            modelId: manifest.modelId,
            maxTokens: 100,
            session: sid(),
          })
          expect(route.hops.map((h) => [h.hostId, h.blocks])).toEqual([
            [ha.hostId, [0, 3]],
            [hb.hostId, [3, 5]],
          ])
          const { models } = await callRpc(client, ClientToTracker, 'models.list', {})
          expect(models[0]?.coverage).toEqual([1, 1, 1, 1, 1])

          // b stays connected but stops heartbeating: three missed beats (600 ms) and it is out.
          const keepA = setInterval(
            () => void callRpc(a, HostToTracker, 'host.heartbeat', { activeSessions: 0 }).catch(() => {}),
            100,
          )
          await new Promise((r) => setTimeout(r, 900))
          clearInterval(keepA)
          await expect(
            callRpc(client, ClientToTracker, 'route.plan', {
              modelId: manifest.modelId,
              maxTokens: 100,
              session: sid(),
            }),
          ).rejects.toMatchObject({
            code: 'no_route',
            details: expect.objectContaining({ uncovered: [[3, 5]] }),
          })
          await callRpc(b, HostToTracker, 'host.heartbeat', { activeSessions: 0 })
          expect(
            (
              await callRpc(client, ClientToTracker, 'route.plan', {
                modelId: manifest.modelId,
                maxTokens: 100,
                session: sid(),
              })
            ).hops,
          ).toHaveLength(2)

          a.close()
          await new Promise((r) => setTimeout(r, 100))
          await expect(
            callRpc(client, ClientToTracker, 'route.plan', {
              modelId: manifest.modelId,
              maxTokens: 100,
              session: sid(),
            }),
          ).rejects.toMatchObject({
            code: 'no_route',
            details: expect.objectContaining({ uncovered: [[0, 3]] }),
          })
        } finally {
          for (const s of [a, b, client]) s.close()
        }
      },
    )

    it('authenticates by signed challenge: no auth, a reused nonce, a wrong key are refused', async () => {
      const refused = (auth: unknown) =>
        new Promise<string>((resolve) => {
          const s = io(`${tracker.url}/clients`, {
            auth: auth as object,
            transports: ['websocket'],
            reconnection: false,
          })
          s.once('connect', () => resolve('connected'))
          s.once('connect_error', (e) => {
            s.close()
            resolve(e.message)
          })
        })
      expect(await refused({})).toMatch(/GET \/auth\/challenge/)
      const me = NodeIdentity.generate()
      const challenge = (await (await fetch(`${tracker.url}/auth/challenge`)).json()) as AuthChallenge
      const answer = me.answer('/clients', challenge)
      expect(
        await refused({ ...answer, signature: NodeIdentity.generate().answer('/clients', challenge).signature }),
      ).toMatch(/does not match/)
      expect(await refused(answer)).toMatch(/unknown, used or expired/)
      const wrongNamespace = me.answer(
        '/hosts',
        (await (await fetch(`${tracker.url}/auth/challenge`)).json()) as AuthChallenge,
      )
      expect(await refused(wrongNamespace)).toMatch(/does not match/)
    })

    it('answers a burst of malformed messages with typed errors and keeps serving', async () => {
      const host = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
      const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        const bad: [typeof host, string, unknown][] = [
          [host, 'host.state', { modelId: 'stories260k', blocks: [3, 1] }],
          [host, 'host.hello', { profile: { cpu: 'fast' } }],
          [host, 'host.heartbeat', 'beat'],
          [host, 'host.state', serving(manifest, [0, 2])], // before host.hello
          [client, 'route.plan', { modelId: 'Not An Id', maxTokens: -1 }],
          [client, 'model.publish', { manifest: { format: 'x' }, torrent: 'not bytes' }],
          [client, 'relay.forward', { hostId: '0123456789abcdef0123', frame: Buffer.from('x') }],
          [client, 'placement.preview', null],
        ]
        const answers = []
        for (let round = 0; round < 5; round++) {
          for (const [socket, event, payload] of bad)
            answers.push(await socket.timeout(2000).emitWithAck(event, payload))
        }
        for (const answer of answers)
          expect(answer).toMatchObject({ ok: false, error: { code: expect.any(String), message: expect.any(String) } })
        expect(answers[0]).toMatchObject({
          error: { code: 'bad_request', message: expect.stringMatching(/^host\.state: .*blocks/) },
        })
        expect(answers[3]).toMatchObject({ error: { code: 'no_hello' } })
        expect(answers[6]).toMatchObject({ error: { code: 'host_unreachable' } })
        // Unknown events and events without an ack are ignored, not fatal.
        client.emit('no.such.event', { x: 1 })
        client.emit('models.list', {})
        const { models } = await callRpc(client, ClientToTracker, 'models.list', {})
        expect(models.map((m) => m.modelId)).toEqual(['stories260k'])
        expect(tracker.rejected.get('bad_request')).toBeGreaterThanOrEqual(25)
      } finally {
        host.close()
        client.close()
      }
    })

    it(
      'answers binary data where a block range or number ' + 'is expected with bad_request, and keeps serving',
      async () => {
        const host = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
        const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
        try {
          // zod 4 freezes `.readonly()` input even when the parse fails: a Buffer there made safeParse throw.
          const bad: [typeof host, string, unknown][] = [
            [client, 'route.plan', { modelId: manifest.modelId, maxTokens: 10, span: Buffer.from('xx') }],
            [client, 'route.plan', { modelId: manifest.modelId, maxTokens: Buffer.from('10') }],
            [client, 'route.plan', Buffer.from('route me')],
            [
              client,
              'placement.preview',
              { modelId: manifest.modelId, profile: { ...PROFILE, gpus: Buffer.alloc(8) } },
            ],
            [
              host,
              'host.hello',
              { profile: PROFILE, state: { ...serving(manifest, [0, 2]), blocks: Buffer.from('xx') } },
            ],
            [host, 'host.state', { ...serving(manifest, [0, 2]), blocks: new Uint8Array([1, 2]) }],
          ]
          for (const [socket, event, payload] of bad) {
            expect(await socket.timeout(2000).emitWithAck(event, payload)).toMatchObject({
              ok: false,
              error: { code: 'bad_request', message: expect.any(String) },
            })
          }
          expect((await callRpc(client, ClientToTracker, 'models.list', {})).models.map((m) => m.modelId)).toEqual([
            'stories260k',
          ])
        } finally {
          host.close()
          client.close()
        }
      },
    )

    it('answers an unknown event that asks for an acknowledgement with a typed unknown_event error', async () => {
      const host = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
      const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        expect(await client.timeout(2000).emitWithAck('no.such.event', { x: 1 })).toMatchObject({
          ok: false,
          error: { code: 'unknown_event', message: expect.stringContaining('no.such.event') },
        })
        // A host event on the clients' namespace is unknown there too.
        expect(await client.timeout(2000).emitWithAck('host.hello', {})).toMatchObject({
          ok: false,
          error: { code: 'unknown_event' },
        })
        expect(await host.timeout(2000).emitWithAck('route.plan', {})).toMatchObject({
          ok: false,
          error: { code: 'unknown_event' },
        })
        expect(await client.timeout(2000).emitWithAck('__proto__')).toMatchObject({
          ok: false,
          error: { code: 'unknown_event' },
        })
      } finally {
        host.close()
        client.close()
      }
    })

    it('persists published models across a restart (the same database)', async () => {
      const path = (await engine.fresh()).location
      const keyPath = join(dir, 'restart-key.pem')
      const first = await Tracker.start({ dbPath: path, keyPath })
      const c1 = await connectTracker(first.url, '/clients', NodeIdentity.generate())
      await callRpc(c1, ClientToTracker, 'model.publish', { manifest, torrent, tokenizer })
      c1.close()
      await first.close()
      const second = await Tracker.start({ dbPath: path, keyPath })
      const c2 = await connectTracker(second.url, '/clients', NodeIdentity.generate())
      try {
        expect((await callRpc(c2, ClientToTracker, 'models.list', {})).models.map((m) => m.modelId)).toEqual([
          'stories260k',
        ])
      } finally {
        c2.close()
        await second.close()
      }
    })
  })
