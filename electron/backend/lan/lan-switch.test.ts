// The Settings switch on a real AppBackend (embedded tracker, no model), without mDNS: this test runs on the
// machine's own network, where nothing may be multicast; e2e/lan-pairing.e2e.test.ts advertises and finds apps
// by real mDNS inside network namespaces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../../client/swarm-client'
import { interfaceAddresses } from '../../../host/network/candidates'
import { NodeIdentity } from '../../../identity/keys'
import { type AppInput, type AppMethod, type AppOutput, readAppReply } from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { AppBackend } from '../backend'

let cleanup: () => Promise<void> = async () => {}
/** This computer's first LAN address, as the API tab shows it (undefined: none but loopback). */
const LAN = interfaceAddresses().find((a) => !a.startsWith('127.'))
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
    // The API (the tracker's HTTP port) too: its endpoint names loopback.
    expect(backend.embeddedTracker?.address().address).toBe('127.0.0.1')
    expect(await call('api.get', {})).toMatchObject({
      lanOpen: false,
      endpoint: `http://127.0.0.1:${backend.embeddedTracker?.port}/v1`,
    })
  })

  it(
    `on: the API listens on every interface and its endpoint is this computer's LAN ` +
      `address${LAN === undefined ? ' (skipped: this machine has no non-loopback IPv4 address)' : ''}`,
    async ({ skip }) => {
      if (LAN === undefined) skip()
      expect((await call('settings.update', { lanOpen: true })).lanOpen).toBe(true)
      const port = backend.embeddedTracker?.port
      expect(backend.embeddedTracker?.address().address).toBe('0.0.0.0')
      // Nothing is sent to that address here (tests stay on loopback):
      // the API still asks for a key there (the gateway's auth).
      expect(await call('api.get', {})).toMatchObject({ lanOpen: true, endpoint: `http://${LAN}:${port}/v1` })
      expect((await call('settings.update', { lanOpen: false })).lanOpen).toBe(false)
      expect(await call('api.get', {})).toMatchObject({
        lanOpen: false,
        endpoint: `http://127.0.0.1:${backend.embeddedTracker?.port}/v1`,
      })
    },
  )

  it('on: listens on every interface and refuses a stranger while the app itself stays in', async () => {
    expect((await call('settings.update', { lanOpen: true })).lanOpen).toBe(true)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/0\.0\.0\.0:/)
    expect((await call('lan.get', {})).open).toBe(true)
    await expect(SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())).rejects.toMatchObject({
      code: 'not_admitted',
    })
    // The app's own client is on the tracker: its calls still answer.
    expect((await call('swarm.get', {})).hosts).toEqual([])
  })

  it('off again: binds 127.0.0.1 again', async () => {
    expect((await call('settings.update', { lanOpen: false })).lanOpen).toBe(false)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    expect((await call('lan.get', {})).open).toBe(false)
  })
})
