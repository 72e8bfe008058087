// The Settings switch on a real AppBackend (embedded tracker, no model) and a real mDNS browser beside it.
import { Bonjour, type Browser } from 'bonjour-service'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../../client/swarm-client'
import { NodeIdentity } from '../../../identity/keys'
import { type AppInput, type AppMethod, type AppOutput, LAN_SERVICE_TYPE, readAppReply } from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { AppBackend } from '../backend'

let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let bonjour: Bonjour
let browser: Browser
let ownKey = ''

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !check(); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const advertised = () => browser.services.some((s) => s.txt?.key === ownKey)

describe('the switch "Open this swarm to my home network"', () => {
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-lan-')
    cleanup = scratch.cleanup
    backend = await AppBackend.start({ dataDir: scratch.dir, defaultModels: [], threads: 1 })
    ownKey = (await call('settings.get', {})).publicKey
    bonjour = new Bonjour()
    browser = bonjour.find({ type: LAN_SERVICE_TYPE })
  })

  afterAll(async () => {
    browser?.stop()
    await new Promise<void>((resolve) => (bonjour === undefined ? resolve() : bonjour.destroy(() => resolve())))
    await backend?.close()
    await cleanup()
  })

  it('is off by default: the embedded tracker binds 127.0.0.1 and nothing is advertised', async () => {
    expect((await call('settings.get', {})).lanOpen).toBe(false)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    expect((await call('lan.get', {})).advertising).toBe(false)
  })

  it('on: listens on every interface, is advertised with its key, and refuses a stranger while the app itself stays in', async () => {
    expect((await call('settings.update', { lanOpen: true })).lanOpen).toBe(true)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/0\.0\.0\.0:/)
    expect((await call('lan.get', {})).advertising).toBe(true)
    browser.update()
    await until('the advertisement is seen', advertised)
    const service = browser.services.find((s) => s.txt?.key === ownKey)
    expect(service?.port).toBe(backend.embeddedTracker?.port)
    await expect(SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())).rejects.toMatchObject({ code: 'not_admitted' })
    // The app's own client is on the tracker: its calls still answer.
    expect((await call('swarm.get', {})).hosts).toEqual([])
  })

  it('off again: stops advertising (a goodbye) and binds 127.0.0.1 again', async () => {
    expect((await call('settings.update', { lanOpen: false })).lanOpen).toBe(false)
    expect(backend.embeddedTracker?.url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    expect((await call('lan.get', {})).advertising).toBe(false)
    await until('the advertisement is withdrawn', () => !advertised())
  })
})
