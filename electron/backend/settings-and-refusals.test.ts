// Settings that cannot be saved or name no tracker, a switch of tracker, files that are not models, the file
// dialog, malformed calls: each refused or carried out whole, and the backend keeps serving.
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { Host } from '../../host/host'
import { backendCalls } from '../../test/backend-calls'
import {
  closedPort,
  type RecordedEvent,
  savedHostingIn,
  seenIn,
  startEmbeddedBackend,
  until,
} from '../../test/embedded-backend'
import { scratchDir } from '../../test/models'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
const events: RecordedEvent[] = []
const MODEL = 'stories260k'
/** Serves the blocks before this computer's range, so the tracker-switch spec's chat has a whole route. */
let extra: Host | undefined
const MESSAGES = [{ role: 'user' as const, content: 'Tell me a story about a cat.' }]
const { call, failure } = backendCalls(() => backend)
const seen = seenIn(events)
const savedHosting = () => savedHostingIn(join(dir, 'app'))

describe(`the app backend on its embedded swarm`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-app-'))
    backend = await startEmbeddedBackend(join(dir, 'app'), events)
    extra = new Host({
      trackerUrl: backend.trackerUrl,
      dataDir: join(dir, 'extra'),
      modelId: MODEL,
      blocks: [0, 2],
      threads: 1,
    })
    await extra.start()
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  afterAll(async () => {
    await extra?.stop(1000)
    await backend?.close()
    await cleanup()
  })

  it('changes nothing when the settings cannot be saved, though the new tracker answers', async () => {
    const other = await Tracker.start({ dbPath: join(dir, 'other.sqlite'), host: '127.0.0.1', port: 0 })
    // The store writes a temp file and renames it over settings.json: a folder in its place fails the rename.
    const path = join(dir, 'app', 'settings.json')
    let kept = ''
    const restore = async () => {
      if (!(await stat(path)).isDirectory()) return
      await rm(path, { recursive: true })
      await writeFile(path, kept)
    }
    try {
      await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
      await until('serving', () => backend.hostingStatus.phase === 'serving')
      const before = await call('settings.get', {})
      kept = await readFile(path, 'utf8')
      await rm(path)
      await mkdir(path)
      await failure('settings.update', { trackerUrl: other.url, limits: { threads: 2 } })
      await restore()
      expect(await call('settings.get', {})).toEqual(before)
      expect(backend.hostingStatus).toMatchObject({ phase: 'serving', blocks: [2, 5] })
      expect((await call('models.list', {})).models.map((m) => m.modelId)).toEqual([MODEL])
      expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [2, 5], paused: false })
      expect((await readdir(join(dir, 'app'))).filter((f) => f.endsWith('.tmp'))).toEqual([])
    } finally {
      if (kept !== '') await restore()
      await other.close()
    }
  })

  it(
    'a switch of tracker stops hosting and ends a chat saying the connection changed; the same URL with a slash ' +
      'is no switch',
    async () => {
      const other = await Tracker.start({ dbPath: join(dir, 'other-2.sqlite'), host: '127.0.0.1', port: 0 })
      try {
        expect(backend.hostingStatus.phase).toBe('serving')
        await call('chat.send', { chatId: 'switch-1', modelId: MODEL, messages: MESSAGES, maxTokens: 2000 })
        await until(
          'the first token',
          () =>
            seen('chat.token').some((t) => t.chatId === 'switch-1') ||
            seen('chat.error').some((e) => e.chatId === 'switch-1'),
        )
        expect(seen('chat.error').map((e) => e.error.message)).toEqual([])
        const settings = await call('settings.update', { trackerUrl: `${other.url}/` })
        expect(settings).toMatchObject({ trackerUrl: other.url, connectedTrackerUrl: other.url })
        await until(
          'the chat ended',
          () =>
            seen('chat.error').some((e) => e.chatId === 'switch-1') ||
            seen('chat.done').some((d) => d.chatId === 'switch-1'),
        )
        expect(seen('chat.error').find((e) => e.chatId === 'switch-1')?.error).toMatchObject({
          code: 'swarm_changed',
          message: expect.stringMatching(/swarm connection changed/),
        })
        expect(backend.hostingStatus).toMatchObject({ phase: 'idle', modelId: null })
        expect(await savedHosting()).toBeNull()
        // On a remote tracker the app's own account is unknown: no invented id.
        expect((await call('earnings.get', {})).account).toBeNull()
        const url = backend.trackerUrl
        expect(await call('settings.update', { trackerUrl: `${other.url}//` })).toMatchObject({
          connectedTrackerUrl: url,
        })
        expect(backend.trackerUrl).toBe(url)
      } finally {
        await call('settings.update', { trackerUrl: null }).catch(() => {}) // hosts again the range left there
        await call('hosting.stop', {}).catch(() => {})
        await other.close()
      }
    },
  )

  it('refuses a tracker URL where no tracker answers, and changes nothing', async () => {
    const before = await call('settings.get', {})
    const url = `http://127.0.0.1:${await closedPort()}`
    const error = await failure('settings.update', { trackerUrl: url, limits: { threads: 2 } })
    expect(error.code).toBe('tracker_unreachable')
    expect(error.message).toContain(`no Neuron tracker answers at ${url}`)
    expect(await call('settings.get', {})).toEqual(before)
  })

  it('refuses to add a file that is not a GGUF, and lists the same models', async () => {
    const path = join(dir, 'notes.gguf')
    await writeFile(path, 'hello, not a model')
    const error = await failure('models.add', { path })
    expect(error).toMatchObject({
      code: 'not_gguf',
      message: `${path} is not a GGUF file (it starts with "hell"); pick a .gguf model file`,
    })
    expect((await call('models.list', {})).models.map((m) => m.modelId)).toEqual([MODEL])
  })

  it(
    'starts with an empty swarm when the default model is missing, and offers the file dialog only where its ' +
      'adapter has one',
    async () => {
      expect((await call('settings.get', {})).canPickFiles).toBe(false)
      expect(await failure('models.pick', {})).toMatchObject({
        code: 'not_available',
        message: expect.stringMatching(/type the path/),
      })
      const chosen = [join(dir, 'picked.gguf'), null]
      const withDialog = await AppBackend.start({
        dataDir: join(dir, 'dialog'),
        trackerUrl: null,
        defaultModels: [join(dir, 'no-such-model.gguf')],
        threads: 1,
        pickFile: async () => chosen.shift() ?? null,
      })
      try {
        expect(await withDialog.call('models.list', {})).toEqual({ ok: true, value: { models: [] } })
        const settings = await withDialog.call('settings.get', {})
        expect(settings.ok && (settings.value as { canPickFiles: boolean }).canPickFiles).toBe(true)
        expect(await withDialog.call('models.pick', {})).toEqual({
          ok: true,
          value: { path: join(dir, 'picked.gguf') },
        })
        // Cancelled: no path, and no error.
        expect(await withDialog.call('models.pick', {})).toEqual({ ok: true, value: { path: null } })
      } finally {
        await withDialog.close()
      }
    },
  )

  it('answers malformed calls with bad_request and keeps serving', async () => {
    expect((await failure('hosting.start', { modelId: MODEL, blocks: [3, 1] })).code).toBe('bad_request')
    expect((await failure('chat.send', { chatId: 'x', modelId: MODEL, messages: [] })).code).toBe('bad_request')
    expect((await failure('no.such.method', {})).code).toBe('bad_request')
    expect((await failure('settings.update', { limits: { threads: 0 } })).code).toBe('bad_request')
    expect((await failure('identity.import', { pem: 'not a key' })).code).toBe('bad_identity')
    expect((await call('settings.get', {})).limits.threads).toBe(1)
  })
})
