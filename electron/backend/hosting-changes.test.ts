// Hosting changed while it runs: paused, resumed, stopped, started again at once, and refused over a limit.
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { backendCalls } from '../../test/backend-calls'
import {
  liveHosts,
  type RecordedEvent,
  savedHostingIn,
  seenIn,
  startEmbeddedBackend,
  until,
} from '../../test/embedded-backend'
import { scratchDir } from '../../test/models'
import type { AppBackend } from './backend'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
const events: RecordedEvent[] = []
const MODEL = 'stories260k'

const { call, failure } = backendCalls(() => backend)
// The home-network switch is turned on below: nothing is multicast from a test outside a network namespace.
process.env.NEURON_MDNS = '0'
const seen = seenIn(events)
const savedHosting = () => savedHostingIn(join(dir, 'app'))

describe(`the app backend on its embedded swarm`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-app-'))
    backend = await startEmbeddedBackend(join(dir, 'app'), events)
    // The first spec pauses and resumes a range already serving.
    await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
    await until('serving', () => backend.hostingStatus.phase === 'serving')
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  afterAll(async () => {
    await backend?.close()
    await cleanup()
  })

  it('pauses (artifacts stay) and resumes serving the same range, then stops', async () => {
    const blocks = backend.hostingStatus.blocks
    expect((await call('hosting.pause', {})).phase).toBe('paused')
    events.length = 0
    expect((await call('hosting.resume', {})).blocks).toEqual(blocks)
    await until('serving again', () => seen('hosting.status').some((s) => s.phase === 'serving'))
    expect((await call('hosting.stop', {})).phase).toBe('idle')
    expect((await call('hosting.status', {})).modelId).toBeNull()
  })

  it(
    'runs hosting changes in the order called: two stops and a start at once leave one host, serving what ' +
      'is saved',
    async () => {
      const live = liveHosts()
      await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
      await until('serving', () => backend.hostingStatus.phase === 'serving')
      const [first, second, started] = await Promise.all([
        call('hosting.stop', {}),
        call('hosting.stop', {}),
        call('hosting.start', { modelId: MODEL, blocks: [1, 5] }),
      ])
      expect([first.phase, second.phase]).toEqual(['idle', 'idle'])
      expect(started).toMatchObject({ phase: 'downloading', blocks: [1, 5] })
      await until('serving again', () => backend.hostingStatus.phase === 'serving')
      expect(backend.hostingStatus).toMatchObject({ modelId: MODEL, blocks: [1, 5] })
      expect(live.size).toBe(1)
      expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [1, 5], paused: false })
    },
  )

  it('a pause and a start of another range at once: the pause lands first, then the new range serves', async () => {
    const live = liveHosts()
    const [paused, started] = await Promise.all([
      call('hosting.pause', {}),
      call('hosting.start', { modelId: MODEL, blocks: [3, 5] }),
    ])
    expect(paused).toMatchObject({ phase: 'paused', blocks: [1, 5] })
    expect(started).toMatchObject({ phase: 'downloading', blocks: [3, 5] })
    await until('serving the new range', () => backend.hostingStatus.phase === 'serving')
    expect(backend.hostingStatus.blocks).toEqual([3, 5])
    expect(live.size).toBe(1)
    expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [3, 5], paused: false })
    await call('hosting.stop', {})
  })

  it('stopping while the host starts lets it go: no host stays, and the tracker sees it leave', async () => {
    const tracker = backend.embeddedTracker
    if (tracker === null) throw new Error('not embedded')
    const live = liveHosts()
    expect((await call('hosting.start', { modelId: MODEL, blocks: [0, 5] })).phase).toBe('downloading')
    expect(await call('hosting.stop', {})).toMatchObject({ phase: 'idle', modelId: null, serving: null })
    expect(live.size).toBe(0)
    await until('the host offline', () => tracker.registry.get(backend.hostId)?.online !== true, 5000)
    events.length = 0
    await new Promise((r) => setTimeout(r, 500))
    expect(seen('hosting.status').map((s) => s.phase)).toEqual([])
    expect(await savedHosting()).toBeNull()
  })

  it(
    'refuses a range over the memory limit, hosts on the CPU when GPUs are off, and counts no more than the ' +
      'computer has',
    async () => {
      await call('settings.update', { limits: { memoryBytes: 1000, useGpu: false } })
      const error = await failure('hosting.start', { modelId: MODEL, blocks: [0, 5] })
      expect(error.code).toBe('memory_limit')
      expect(error.message).toMatch(
        new RegExp(
          String.raw`^layers 1–5 of stories260k need about [\d.]+ (bytes|MB|GB) of memory .* ` +
            "over this computer's memory limit of 1000 bytes",
        ),
      )
      expect(backend.hostingStatus.phase).toBe('idle')
      expect(await savedHosting()).toBeNull()

      await call('settings.update', { limits: { memoryBytes: 1e12, diskBytes: 1e15 } })
      const computer = await call('computer.get', {})
      expect(computer.servableBytes).toBeLessThanOrEqual(
        Math.min(computer.profile.memory.availableBytes, computer.profile.disk.freeBytes),
      )

      const live = liveHosts()
      await call('hosting.start', { modelId: MODEL, blocks: [3, 5] })
      expect([...live].map((h) => h.options.device)).toEqual(['cpu'])
      await until('serving on the CPU', () => backend.hostingStatus.phase === 'serving')
      // A memory limit under what the hosted range needs is refused: hosting would carry on over it.
      const refused = await failure('settings.update', { limits: { memoryBytes: 1000 } })
      expect(refused.code).toBe('memory_limit')
      expect(refused.message).toMatch(
        /^this computer hosts layers 4–5 of stories260k, which need about .* over a limit/,
      )
      expect((await call('settings.get', {})).limits.memoryBytes).toBe(1e12)
      await call('hosting.stop', {})
      await call('settings.update', { limits: { memoryBytes: null, diskBytes: null, useGpu: true } })
    },
  )

  it('keeps hosting, and a pause, when the home-network switch restarts the embedded swarm', async () => {
    await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
    await until('serving', () => backend.hostingStatus.phase === 'serving')
    await call('settings.update', { lanOpen: true })
    await until('serving after the restart', () => backend.hostingStatus.phase === 'serving', 30_000)
    expect(backend.hostingStatus.blocks).toEqual([2, 5])
    await call('hosting.pause', {})
    await call('settings.update', { lanOpen: false })
    expect(backend.hostingStatus).toMatchObject({ phase: 'paused', blocks: [2, 5] })
    expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [2, 5], paused: true })
    await call('hosting.stop', {})
  })
})
