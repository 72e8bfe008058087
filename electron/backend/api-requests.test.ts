// The API tab's request log and key on a real AppBackend (embedded tracker, SQLite) with a real host serving
// stories260K, called with the openai client as a developer's program would.
import { join } from 'node:path'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Host } from '../../host/host'
import { NodeIdentity } from '../../identity/keys'
import { type AppInput, type AppMethod, type AppOutput, readAppReply } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { AppBackend } from './backend'

let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let host: Host | undefined
const MODEL = 'stories260k'

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

async function ownBalance(): Promise<number> {
  const tracker = backend.embeddedTracker
  const account = await tracker?.accounts.byPublicKey((await call('settings.get', {})).publicKey)
  if (tracker == null || account === undefined) throw new Error('the app has no account on its embedded tracker')
  return tracker.accounts.balance(account.accountId)
}

describe('the API tab’s request log and key, with the openai client', () => {
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-api-log-')
    cleanup = scratch.cleanup
    backend = await AppBackend.start({
      dataDir: join(scratch.dir, 'app'),
      trackerUrl: null,
      defaultModels: [STORIES_260K],
      threads: 1,
      mdns: false,
    })
    host = new Host({
      trackerUrl: backend.trackerUrl,
      dataDir: join(scratch.dir, 'host'),
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

  it('lists two completions newest first, with the tokens their usage said and the credits the ' +
    'balance lost', async () => {
    expect(await call('api.requests', {})).toEqual({ requests: [] })
    const { apiKey, view } = await call('api.createKey', {})
    const client = new OpenAI({ baseURL: view.endpoint, apiKey, maxRetries: 0 })
    const spent: { usage: OpenAI.CompletionUsage | undefined; drop: number }[] = []
    for (const prompt of ['Once upon a time', 'The little dog ran to the park and']) {
      const before = await ownBalance()
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 6 + spent.length * 4,
      })
      spent.push({ usage: completion.usage, drop: before - (await ownBalance()) })
    }
    const { requests } = await call('api.requests', {})
    expect(requests).toHaveLength(2)
    const [second, first] = requests
    for (const [row, paid] of [
      [first, spent[0]],
      [second, spent[1]],
    ] as const) {
      expect(row).toMatchObject({
        endpoint: 'chat.completions',
        modelId: MODEL,
        status: 'completed',
        promptTokens: paid?.usage?.prompt_tokens,
        completionTokens: paid?.usage?.completion_tokens,
        chargedMicro: paid?.drop,
      })
      expect(row?.chargedMicro).toBeGreaterThan(0)
    }
    expect(second?.startedAt).toBeGreaterThanOrEqual(first?.startedAt ?? Number.POSITIVE_INFINITY)
  }, 180_000)

  it('revokes the old identity’s key when another identity is imported (401 invalid_api_key); the new one starts ' +
    'with no key', async () => {
    const { apiKey, view } = await call('api.createKey', {})
    const old = new OpenAI({ baseURL: view.endpoint, apiKey, maxRetries: 0 })
    expect((await old.models.list()).data.map((m) => m.id)).toContain(MODEL)

    await call('identity.import', { pem: NodeIdentity.generate().exportPrivatePem() })
    // Refused at once, before the API tab is opened again (the embedded tracker keeps its port: the same endpoint).
    const refused = await old.models.list().then(
      () => null,
      (e: unknown) => e,
    )
    expect(refused).toBeInstanceOf(OpenAI.APIError)
    expect(refused).toMatchObject({ status: 401, code: 'invalid_api_key' })
    const after = await call('api.get', {})
    expect(after).toMatchObject({ endpoint: view.endpoint, key: null })
    // The log is the new identity's account's: empty.
    expect(await call('api.requests', {})).toEqual({ requests: [] })
  }, 120_000)
})
