import { join } from 'node:path'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Host } from '../../host/host'
import { type AppInput, type AppMethod, type AppOutput, readAppReply } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'

let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let host: Host | undefined
let dir = ''
const MODEL = 'stories260k'

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

describe('the API tab’s key on the embedded swarm', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-api-'))
    backend = await AppBackend.start({
      dataDir: join(dir, 'app'),
      trackerUrl: null,
      defaultModels: [STORIES_260K],
      threads: 1,
      mdns: false,
    })
    host = new Host({
      trackerUrl: backend.trackerUrl,
      dataDir: join(dir, 'host'),
      modelId: MODEL,
      blocks: [0, 5],
      threads: 1,
    })
    await host.start()
  })
  afterAll(async () => {
    await host?.stop(1000)
    await backend?.close()
    await cleanup()
  })

  it('makes a key for the app’s own account that the openai client completes with, shows it masked after, and ' +
    'revokes it (401 at once)', async () => {
    const before = await call('api.get', {})
    expect(before).toEqual({
      endpoint: `${backend.trackerUrl}/v1`,
      lanOpen: false,
      embedded: true,
      modelIds: [MODEL],
      key: null,
    })

    const { apiKey, view } = await call('api.createKey', {})
    expect(apiKey).toMatch(/^nk-/)
    expect(view.key?.masked).toBe(`${apiKey.slice(0, 5)}…${apiKey.slice(-4)}`)
    expect(JSON.stringify(await call('api.get', {}))).not.toContain(apiKey)
    // The key pays from the account chat pays from: the app's own.
    const tracker = backend.embeddedTracker
    const account = await tracker?.accounts.byPublicKey((await call('settings.get', {})).publicKey)
    expect((await tracker?.accounts.byApiKey(apiKey))?.accountId).toBe(account?.accountId)

    const client = new OpenAI({ baseURL: view.endpoint, apiKey, maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Once upon a time' }],
      max_tokens: 8,
    })
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0)
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0)

    // A new key replaces the old one.
    const second = await call('api.createKey', {})
    await expect(new OpenAI({ baseURL: view.endpoint, apiKey, maxRetries: 0 }).models.list()).rejects.toMatchObject({
      status: 401,
    })
    const revoked = await call('api.revokeKey', {})
    expect(revoked.key).toBeNull()
    const refused = await new OpenAI({ baseURL: view.endpoint, apiKey: second.apiKey, maxRetries: 0 }).chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'Once' }], max_tokens: 4 })
      .then(
        () => null,
        (e: unknown) => e,
      )
    expect(refused).toBeInstanceOf(OpenAI.APIError)
    expect(refused).toMatchObject({ status: 401, code: 'invalid_api_key' })
  }, 120_000)

  it('on a remote tracker shows its endpoint and makes no key: that tracker’s operator hands keys out', async () => {
    const remote = await Tracker.start({ dbPath: join(dir, 'remote.sqlite'), host: '127.0.0.1', port: 0 })
    const elsewhere = await AppBackend.start({
      dataDir: join(dir, 'elsewhere'),
      trackerUrl: remote.url,
      defaultModels: [],
      threads: 1,
      mdns: false,
    })
    try {
      const view = readAppReply('api.get', await elsewhere.call('api.get', {}))
      expect(view).toEqual({ endpoint: `${remote.url}/v1`, lanOpen: false, embedded: false, modelIds: [], key: null })
      const refused = await elsewhere.call('api.createKey', {})
      expect(refused).toMatchObject({
        ok: false,
        error: { code: 'not_available', message: expect.stringContaining('come from its operator') },
      })
    } finally {
      await elsewhere.close()
      await remote.close()
    }
  })
})
