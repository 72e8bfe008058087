// Hosts joining: the range a host says it serves is checked against its model's manifest, in hello and in state.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { packModel } from '../../gguf/pack'
import { tokenizerGguf } from '../../gguf/tokenizer'
import { NodeIdentity } from '../../identity/keys'
import {
  ClientToTracker,
  callRpc,
  type HardwareProfile,
  HostToTracker,
  type Manifest,
  type ServingState,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { readyState, TEST_PROFILE } from '../../test/peers'
import { createModelTorrent } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { Tracker } from '../server'

const PROFILE: HardwareProfile = TEST_PROFILE

function serving(manifest: Manifest, blocks: [number, number], status: ServingState['status'] = 'ready'): ServingState {
  return { ...readyState(manifest.modelId, blocks), status }
}

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let manifest: Manifest
let tokenizer: Buffer

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`hosts joining a tracker on ${engine.name}`, () => {
    engine.setUp()
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir())
      const dbPath = (await engine.fresh()).location
      tracker = await Tracker.start({ dbPath, keyPath: join(dir, 'tracker-key.pem'), heartbeatMs: 200 })
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'stories'), blocksPerArtifact: 2 })
      tokenizer = await tokenizerGguf(join(dir, 'stories', 'head.gguf'))
    })
    afterAll(async () => {
      await tracker?.close()
      await cleanup()
    })

    it(
      'refuses a host whose range cuts the model where ' + 'its manifest forbids a cut, in hello and in state',
      async () => {
        // the same files as a model whose boundaries 2 and 3 may not be cut (as a seam carrying indices could require)
        const seams = Array.from({ length: manifest.nLayer - 1 }, (_, i) => ({
          cut: i + 1 < 2 || i + 1 > 3,
          values: manifest.nEmbd,
          tokenIds: false,
          int32PerToken: 0,
        }))
        const cuts = { ...manifest, modelId: 'stories260k-cuts', seams }
        const client = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
        const host = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
        try {
          await callRpc(client, ClientToTracker, 'model.publish', {
            manifest: cuts,
            torrent: await createModelTorrent(join(dir, 'stories'), cuts, [tracker.announceUrl]),
            tokenizer,
          })
          const forbidden = /blocks \[1, 2\) cut stories260k-cuts where its manifest forbids a cut/
          await expect(
            callRpc(host, HostToTracker, 'host.hello', { profile: PROFILE, state: serving(cuts, [1, 2]) }),
          ).rejects.toMatchObject({
            code: 'bad_request',
            message: expect.stringMatching(forbidden),
          })
          await callRpc(host, HostToTracker, 'host.hello', { profile: PROFILE, state: serving(cuts, [0, 1]) })
          await expect(callRpc(host, HostToTracker, 'host.state', serving(cuts, [1, 2]))).rejects.toMatchObject({
            code: 'bad_request',
            message: expect.stringMatching(forbidden),
          })
          await expect(callRpc(host, HostToTracker, 'host.state', serving(cuts, [1, 9]))).rejects.toMatchObject({
            message: expect.stringMatching(/run past/),
          })
          // between allowed cuts it is taken, and the tracker keeps serving
          await callRpc(host, HostToTracker, 'host.state', serving(cuts, [1, 4], 'loading'))
        } finally {
          host.close()
          client.close()
        }
      },
    )
  })
