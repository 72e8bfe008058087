// The Settings switch on a real AppBackend (embedded tracker, no model), without mDNS: this test runs on the
// machine's own network, where nothing may be multicast; e2e/lan-pairing.e2e.test.ts advertises and finds apps
// by real mDNS inside network namespaces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../../client/swarm-client'
import { NodeIdentity } from '../../../identity/keys'
import { type AppInput, type AppMethod, type AppOutput, readAppReply } from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { AppBackend } from '../backend'

let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

describe('the switch "Open this swarm to my home network" (mDNS off: no multicast outside a namespace)', () => {
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-lan-')
    cleanup = scratch.cleanup
    backend = await AppBackend.start({ dataDir: scratch.dir, defaultModels: [], threads: 1, mdns: false })
  })

  afterAll(async () => {
    await backend?.close()
    await cleanup()
  })

  it('is off by default: the embedded tracker binds 127.0.0.1 and nothing is advertised', async () => {
    expect((await call('settings.get', {})).lanOpen).toBe(false)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    expect((await call('lan.get', {})).advertising).toBe(false)
  })

  it('on: listens on every interface and refuses a stranger while the app itself stays in', async () => {
    expect((await call('settings.update', { lanOpen: true })).lanOpen).toBe(true)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/0\.0\.0\.0:/)
    expect((await call('lan.get', {})).open).toBe(true)
    await expect(SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())).rejects.toMatchObject({ code: 'not_admitted' })
    // The app's own client is on the tracker: its calls still answer.
    expect((await call('swarm.get', {})).hosts).toEqual([])
  })

  it('off again: binds 127.0.0.1 again', async () => {
    expect((await call('settings.update', { lanOpen: false })).lanOpen).toBe(false)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    expect((await call('lan.get', {})).open).toBe(false)
  })
})
