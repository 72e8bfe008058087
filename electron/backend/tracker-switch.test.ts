import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AppInput, type AppMethod, type AppOutput, type HostingStatus, readAppReply } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'
import { SettingsStore } from './settings-store'

const MODEL = 'stories260k'
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let other: Tracker

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; hosting is ${JSON.stringify(backend.hostingStatus)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const hosting = (): Pick<HostingStatus, 'phase' | 'modelId' | 'blocks'> => {
  const { phase, modelId, blocks } = backend.hostingStatus
  return { phase, modelId, blocks }
}
const saved = async () => (await SettingsStore.open(join(dir, 'app'))).value

describe('hosting across a switch of tracker', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-switch-'))
    other = await Tracker.start({ dbPath: join(dir, 'other.sqlite'), host: '127.0.0.1', port: 0 })
    backend = await AppBackend.start({
      dataDir: join(dir, 'app'),
      trackerUrl: null,
      defaultModels: [STORIES_260K],
      threads: 1,
      mdns: false,
    })
  })
  afterAll(async () => {
    await backend?.close()
    await other?.close()
    await cleanup()
  })

  it('stops hosting on a switch to another tracker and, switching back, hosts the same range again', async () => {
    await call('hosting.start', { modelId: MODEL, blocks: [1, 4] })
    await until('serving', () => backend.hostingStatus.phase === 'serving')
    const embeddedUrl = backend.trackerUrl
    await call('settings.update', { trackerUrl: other.url })
    expect(hosting()).toEqual({ phase: 'idle', modelId: null, blocks: null })
    expect(await saved()).toMatchObject({
      hosting: null,
      hostingByTracker: { embedded: { modelId: MODEL, blocks: [1, 4], paused: false } },
    })
    await call('settings.update', { trackerUrl: null })
    // The embedded swarm is back at the same address, and this computer serves the range it served there.
    expect(backend.trackerUrl).toBe(embeddedUrl)
    await until('serving again', () => backend.hostingStatus.phase === 'serving')
    expect(hosting()).toEqual({ phase: 'serving', modelId: MODEL, blocks: [1, 4] })
    expect(await saved()).toMatchObject({
      hosting: { modelId: MODEL, blocks: [1, 4], paused: false },
      hostingByTracker: {},
    })
  })

  it('keeps a paused range paused across the return, and forgets hosting when asked to stop it', async () => {
    await call('hosting.pause', {})
    await call('settings.update', { trackerUrl: other.url })
    await call('settings.update', { trackerUrl: null })
    expect(hosting()).toEqual({ phase: 'paused', modelId: MODEL, blocks: [1, 4] })
    await call('settings.update', { trackerUrl: other.url, hostingOnSwitch: 'stop' })
    await call('settings.update', { trackerUrl: null })
    expect(hosting()).toMatchObject({ phase: 'idle' })
    expect(await saved()).toMatchObject({ hosting: null, hostingByTracker: {} })
  })
})
