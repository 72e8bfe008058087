// The app's Hugging Face downloads on its real backend (embedded tracker, stories260K), against a local HTTP server
// that answers as the Hub does: the real Hub cannot be reached on this machine.
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { HubDownloadView } from '../../protocol'
import { type RecordedEvent, startEmbeddedBackend, until } from '../../test/embedded-backend'
import { HubTestServer } from '../../test/hub-server'
import { STORIES_260K, scratchDir } from '../../test/models'
import type { AppBackend } from './backend'

let dir = ''
let cleanup = async () => {}
let hub: HubTestServer
const backends: AppBackend[] = []

async function call<T>(backend: AppBackend, method: string, input: unknown): Promise<T> {
  const ack = await backend.call(method, input)
  if (!ack.ok) throw new Error(`${method}: ${ack.error.code}: ${ack.error.message}`)
  return ack.value as T
}

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-app-hub-'))
  hub = await HubTestServer.start([
    {
      id: 'karpathy/stories260K-GGUF',
      downloads: 10,
      files: [{ path: 'stories260K-Q8_0.gguf', bytes: await readFile(STORIES_260K) }],
    },
  ])
  vi.stubEnv('HF_ENDPOINT', hub.endpoint)
  vi.stubEnv('HF_HOME', join(dir, 'hf-home'))
})

afterAll(async () => {
  for (const b of backends) await b.close()
  vi.unstubAllEnvs()
  await hub?.close()
  await cleanup()
})

describe('Hugging Face in the app’s backend (local Hub answering as huggingface.co)', () => {
  it('searches, lists a repository’s models, and a download cut and then stopped by closing the app resumes at ' +
    'the next start, by a range, and ends published', async () => {
    const data = join(dir, 'app')
    const events: RecordedEvent[] = []
    const first = await startEmbeddedBackend(data, events)
    backends.push(first)
    const { hits } = await call<{ hits: { id: string }[] }>(first, 'hub.search', { query: 'stories' })
    expect(hits.map((h) => h.id)).toEqual(['karpathy/stories260K-GGUF'])
    const listed = await call<{ models: { name: string; quant: string; swarmModelId: string | null }[] }>(
      first,
      'hub.models',
      {
        repo: 'karpathy/stories260K-GGUF',
      },
    )
    expect(listed.models.map((m) => [m.name, m.quant, m.swarmModelId])).toEqual([
      // the embedded swarm's default model is packed from these very bytes
      ['stories260K-Q8_0', 'Q8_0', 'stories260k'],
    ])

    hub.troubleNext('stories260K-Q8_0.gguf', { cutAfter: 400_000 })
    await call(first, 'hub.download', { repo: 'karpathy/stories260K-GGUF', name: 'stories260K-Q8_0' })
    const part = join(data, 'hub', 'karpathy', 'stories260K-GGUF', 'stories260K-Q8_0.gguf.part')
    // The cut: the downloader waits a second before it resumes, and the app closes meanwhile.
    await until('the cut part', async () => (await stat(part).catch(() => undefined))?.size === 400_000)
    await first.close()
    const pending = JSON.parse(await readFile(join(data, 'hub-downloads.json'), 'utf8'))
    expect(pending.downloads).toEqual([{ repo: 'karpathy/stories260K-GGUF', name: 'stories260K-Q8_0' }])

    const before = hub.requests.length
    const second = await startEmbeddedBackend(data, [])
    backends.push(second)
    let downloads: HubDownloadView[] = []
    await until('the resumed download to be published', async () => {
      downloads = (await call<{ downloads: HubDownloadView[] }>(second, 'hub.downloads', {})).downloads
      return downloads.some((d) => d.phase === 'ready' || d.phase === 'failed')
    })
    expect(downloads[0]).toMatchObject({ phase: 'ready', modelId: 'stories260k-q8_0', quant: 'Q8_0' })
    expect(hub.cdnRanges(before)).toEqual(['bytes=400000-'])
    const { models } = await call<{ models: { modelId: string }[] }>(second, 'models.list', {})
    expect(models.map((m) => m.modelId)).toContain('stories260k-q8_0')
    expect(JSON.parse(await readFile(join(data, 'hub-downloads.json'), 'utf8')).downloads).toEqual([])
  }, 120_000)
})
