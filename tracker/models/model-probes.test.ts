import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import {
  ClientToTracker,
  callRpc,
  decodeProbeSet,
  encodeProbeSet,
  type ProbeSet,
  type RpcRequest,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { packForPublish } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { Tracker } from '../server'

type PublishFiles = Awaited<ReturnType<typeof packForPublish>>

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let stories: PublishFiles
const publisher = NodeIdentity.generate()

async function call<E extends 'model.publish' | 'model.get' | 'models.list'>(
  event: E,
  body: RpcRequest<typeof ClientToTracker, E>,
  to = tracker,
  as = publisher,
) {
  const socket = await connectTracker(to.url, '/clients', as)
  try {
    return await callRpc(socket, ClientToTracker, event, body)
  } finally {
    socket.close()
  }
}

/** model.publish with a body the client-side schema would refuse to send: the tracker's own answer. */
async function publishRaw(body: unknown): Promise<unknown> {
  const socket = await connectTracker(tracker.url, '/clients', publisher)
  try {
    return await socket.timeout(10_000).emitWithAck('model.publish', body)
  } finally {
    socket.close()
  }
}

/** A probe set, decoded or as sent, as plain comparable values: hidden states as hex. */
function comparable(sent: ProbeSet | Uint8Array | undefined) {
  const set = sent instanceof Uint8Array ? decodeProbeSet(sent) : sent
  return (
    set && {
      ...set,
      probes: set.probes.map((p) => ({ ...p, hidden: p.hidden.map((h) => Buffer.from(h).toString('hex')) })),
    }
  )
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(
    `the tracker keeps a model's probes secret and for good on ${engine.name}`,
    () => {
      engine.setUp()
      beforeAll(async () => {
        ;({ dir, cleanup } = await scratchDir())
        tracker = await Tracker.start({
          dbPath: (await engine.fresh()).location,
          keyPath: join(dir, 'tracker-key.pem'),
        })
        stories = await packForPublish(tracker, STORIES_260K, join(dir, 'stories'))
        await call('model.publish', stories)
      })
      afterAll(async () => {
        await tracker?.close()
        await cleanup()
      })

      it('stores the probe set its publisher sent, and model.get hands none out', async () => {
        expect(comparable(tracker.catalog.probes('stories260k'))).toEqual(comparable(stories.probes))
        const files = await call('model.get', { modelId: 'stories260k' }, tracker, NodeIdentity.generate())
        expect(Object.keys(files).sort()).toEqual(['infoHash', 'manifest', 'torrent'])
        expect(JSON.stringify(files.manifest)).not.toMatch(/probe/i)
      })

      it('keeps the first probe set when its publisher publishes the model again, and after a restart', async () => {
        const other = (await packForPublish(tracker, STORIES_260K, join(dir, 'again'))).probes
        expect(comparable(other)).not.toEqual(comparable(stories.probes))
        await expect(call('model.publish', { ...stories, probes: other })).resolves.toMatchObject({
          modelId: 'stories260k',
        })
        expect(comparable(tracker.catalog.probes('stories260k'))).toEqual(comparable(stories.probes))
        const path = (await engine.fresh()).location
        const keyPath = join(dir, 'restart-key.pem')
        const first = await Tracker.start({ dbPath: path, keyPath })
        await call('model.publish', stories, first)
        await first.close()
        const second = await Tracker.start({ dbPath: path, keyPath })
        try {
          expect(comparable(second.catalog.probes('stories260k'))).toEqual(comparable(stories.probes))
        } finally {
          await second.close()
        }
      })

      it(
        'answers probes that are not bytes with bad_request, undecodable or of another model with bad_probes, and ' +
          'keeps serving',
        async () => {
          const set = decodeProbeSet(stories.probes)
          const [probe] = set.probes
          if (probe === undefined) throw new Error('no probe')
          const badRequest = { ok: false, error: { code: 'bad_request', message: expect.stringMatching(/probes/) } }
          expect(await publishRaw({ ...stories, probes: 'lots' })).toMatchObject(badRequest)
          expect(await publishRaw({ ...stories, probes: { ...set } })).toMatchObject(badRequest)
          const badProbes = (why: RegExp) => ({
            ok: false,
            error: { code: 'bad_probes', message: expect.stringMatching(why) },
          })
          expect(
            await publishRaw({ ...stories, probes: stories.probes.subarray(0, stories.probes.byteLength - 4) }),
          ).toMatchObject(badProbes(/more hidden states/))
          expect(await publishRaw({ ...stories, probes: Buffer.from('{"not":"a probe set"}') })).toMatchObject(
            badProbes(/header/),
          )
          const truncated = { ...set, probes: [{ ...probe, hidden: probe.hidden.map((h) => h.subarray(0, 12)) }] }
          expect(await publishRaw({ ...stories, probes: encodeProbeSet(truncated) })).toMatchObject(badProbes(/./))
          expect(
            await publishRaw({ ...stories, probes: encodeProbeSet({ ...set, modelId: 'another' }) }),
          ).toMatchObject(badProbes(/model another/))
          const pastVocab = { ...set, probes: [{ ...probe, tokens: probe.tokens.map(() => 1_000_000) }] }
          expect(await publishRaw({ ...stories, probes: encodeProbeSet(pastVocab) })).toMatchObject(
            badProbes(/vocabulary/),
          )
          expect((await call('models.list', {})).models.map((m) => m.modelId)).toContain('stories260k')
          expect(comparable(tracker.catalog.probes('stories260k'))).toEqual(comparable(stories.probes))
        },
      )

      it('stores a probe set as a compact blob: its f32 bytes plus a small header', () => {
        const set = decodeProbeSet(stories.probes)
        const blob = encodeProbeSet(set)
        const hidden = set.probes.reduce((s, p) => s + p.hidden.reduce((t, h) => t + h.byteLength, 0), 0)
        expect(blob.byteLength).toBeLessThan(hidden + 4096)
        expect(comparable(decodeProbeSet(blob))).toEqual(comparable(stories.probes))
        expect(() => decodeProbeSet(blob.subarray(0, blob.byteLength - 1))).toThrow(/malformed/)
      })
    },
  )
