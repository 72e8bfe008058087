import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AppInput, type AppMethod, type AppOutput, readAppReply } from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { Tracker } from '../../../tracker/server'
import { AppBackend } from '../backend'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
const trackers: Tracker[] = []

const start = () => AppBackend.start({ dataDir: join(dir, 'app'), defaultModels: [], threads: 1 })

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

async function remoteTracker(name: string): Promise<string> {
  const tracker = await Tracker.start({ dbPath: join(dir, `${name}.sqlite`), host: '127.0.0.1', port: 0 })
  trackers.push(tracker)
  return tracker.url
}

const hello = { chatId: 'privacy-1', modelId: 'stories260k', messages: [{ role: 'user' as const, content: 'Hello' }] }

describe('the privacy of the swarm in force', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-privacy-'))
    backend = await start()
  })
  afterAll(async () => {
    await backend?.close()
    for (const tracker of trackers) await tracker.close()
    await cleanup()
  })

  it('is private on the embedded swarm, which needs no consent to chat', async () => {
    expect((await call('settings.get', {})).privacy).toEqual({ level: 'private', consented: true })
    const consent = await backend.call('settings.consent', { trackerUrl: backend.trackerUrl })
    expect(consent).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/embedded private swarm, which needs none/) },
    })
  })

  it(
    'is public on a remote tracker: a chat is refused until the user agrees, once per tracker, remembered across ' +
      'restarts',
    async () => {
      const url = await remoteTracker('public')
      expect((await call('settings.update', { trackerUrl: url })).privacy).toEqual({
        level: 'public',
        consented: false,
      })
      const refused = await backend.call('chat.send', hello)
      expect(refused).toMatchObject({
        ok: false,
        error: { code: 'consent_needed', message: expect.stringMatching(/hosts on a route see your prompt/) },
      })

      // Consent names the tracker in force; another is refused and changes nothing.
      const elsewhere = await backend.call('settings.consent', { trackerUrl: 'https://tracker.example.org' })
      expect(elsewhere).toMatchObject({
        ok: false,
        error: { code: 'bad_request', message: expect.stringContaining(url) },
      })
      expect((await call('settings.get', {})).privacy.consented).toBe(false)
      expect((await call('settings.consent', { trackerUrl: `${url}/` })).privacy).toEqual({
        level: 'public',
        consented: true,
      })
      const sent = await backend.call('chat.send', hello)
      expect(sent.ok || sent.error.code).not.toBe('consent_needed')

      await backend.close()
      backend = await start()
      expect(await call('settings.get', {})).toMatchObject({
        trackerUrl: url,
        privacy: { level: 'public', consented: true },
      })
      // Another public tracker asks again.
      const next = await remoteTracker('public-2')
      expect((await call('settings.update', { trackerUrl: next })).privacy).toEqual({
        level: 'public',
        consented: false,
      })
      expect((await call('settings.update', { trackerUrl: url })).privacy).toEqual({ level: 'public', consented: true })
    },
  )

  it('checks that a tracker answers at a URL without switching to it', async () => {
    const before = await call('settings.get', {})
    const url = await remoteTracker('checked')
    expect(await call('settings.checkTracker', { trackerUrl: `${url}/` })).toEqual({ trackerUrl: url })
    const refused = await backend.call('settings.checkTracker', { trackerUrl: 'http://127.0.0.1:9' })
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'tracker_unreachable', message: expect.stringContaining('no Neuron tracker answers at') },
    })
    expect((await call('settings.get', {})).trackerUrl).toBe(before.trackerUrl)
  })
})
