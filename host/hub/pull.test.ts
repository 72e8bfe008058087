// The Hub flow against a local HTTP server that answers as the Hugging Face Hub does: the real Hub cannot be reached
// on this machine, so every test here says "local Hub". The model is the repository's real stories260K GGUF.
import { createHash } from 'node:crypto'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import type { NeuronError } from '../../protocol'
import { HubTestServer } from '../../test/hub-server'
import { STORIES_260K, scratchDir } from '../../test/models'
import { splitGguf } from '../../test/split-gguf'
import { readManifest } from '../publish'
import { ggufModels } from './gguf-choices'
import { HubApi } from './hub-api'
import type { HubConfig } from './hub-config'
import { downloadHubFile } from './hub-download'
import { parseModelRef, pullModel } from './pull'

const TOKEN = 'hf_test_token_with_access'

let dir = ''
let cleanup = async () => {}
let hub: HubTestServer
let model: Buffer
let wholeArtifacts: string[] = []

async function rejected(p: Promise<unknown>): Promise<NeuronError> {
  return p.then(
    () => {
      throw new Error('expected a refusal')
    },
    (e: NeuronError) => e,
  )
}

async function filesUnder(path: string): Promise<string[]> {
  return readdir(path, { recursive: true }).catch(() => [] as string[])
}

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-hub-'))
  model = await readFile(STORIES_260K)
  const parts = await splitGguf(STORIES_260K, dir, 3)
  const whole = await packModel({ source: STORIES_260K, out: join(dir, 'whole-pack'), blocksPerArtifact: 1 })
  wholeArtifacts = whole.artifacts.map((a) => a.sha256)
  hub = await HubTestServer.start(
    [
      {
        id: 'karpathy/stories260K-GGUF',
        downloads: 900,
        files: [
          { path: 'README.md', bytes: Buffer.from('# stories'), lfs: false },
          { path: 'stories260K-Q8_0.gguf', bytes: model },
          { path: 'stories260K-Q4_K_M.gguf', bytes: model },
          { path: 'mmproj-stories260K-F16.gguf', bytes: model },
        ],
      },
      {
        id: 'karpathy/stories260K-split-GGUF',
        downloads: 20,
        files: await Promise.all(
          parts.map(async (p, i) => ({
            path: `BF16/stories260K-BF16-${String(i + 1).padStart(5, '0')}-of-00003.gguf`,
            bytes: await readFile(p),
          })),
        ),
      },
      {
        id: 'meta-llama/stories260K-gated-GGUF',
        gated: true,
        files: [{ path: 'stories260K-Q8_0.gguf', bytes: model }],
      },
    ],
    { tokens: [TOKEN], pageSize: 2 },
  )
}, 60_000)

afterAll(async () => {
  await hub?.close()
  await cleanup()
})

function config(token?: string): HubConfig {
  return token === undefined ? { endpoint: hub.endpoint } : { endpoint: hub.endpoint, token }
}

describe('the Hub API (local Hub answering as huggingface.co)', () => {
  it('searches GGUF repositories by name, most downloaded first', async () => {
    const hits = await new HubApi(config()).search('stories260k')
    expect(hits.map((h) => h.id)).toEqual([
      'karpathy/stories260K-GGUF',
      'karpathy/stories260K-split-GGUF',
      'meta-llama/stories260K-gated-GGUF',
    ])
    expect(hits[2]?.gated).toBe('manual')
  })

  it('lists a repository’s GGUF models over paged trees: quantizations, sizes, split parts joined', async () => {
    const api = new HubApi(config())
    const one = ggufModels(await api.files('karpathy/stories260K-GGUF', 'main')).models
    expect(one.map((m) => [m.name, m.quant, m.bytes, m.projector])).toEqual([
      ['mmproj-stories260K-F16', 'F16', model.length, true],
      ['stories260K-Q4_K_M', 'Q4_K_M', model.length, false],
      ['stories260K-Q8_0', 'Q8_0', model.length, false],
    ])
    const split = ggufModels(await api.files('karpathy/stories260K-split-GGUF', 'main')).models
    expect(split).toHaveLength(1)
    expect(split[0]?.quant).toBe('BF16')
    expect(split[0]?.files.map((f) => f.path.split('/').pop())).toEqual([
      'stories260K-BF16-00001-of-00003.gguf',
      'stories260K-BF16-00002-of-00003.gguf',
      'stories260K-BF16-00003-of-00003.gguf',
    ])
  })

  it('reads owner/name[:quant] and Hub addresses, and refuses what is not a repository', () => {
    expect(parseModelRef('karpathy/stories260K-GGUF:q8_0')).toEqual({
      repo: 'karpathy/stories260K-GGUF',
      quant: 'q8_0',
    })
    expect(parseModelRef('https://huggingface.co/karpathy/stories260K-GGUF')).toEqual({
      repo: 'karpathy/stories260K-GGUF',
    })
    expect(parseModelRef('hf.co/a/b:Q4_K_M')).toEqual({ repo: 'a/b', quant: 'Q4_K_M' })
    for (const bad of ['stories', '../etc/passwd', 'a/b/c', 'a/..']) {
      expect(() => parseModelRef(bad), bad).toThrow(/owner\/name/)
    }
  })
})

describe('neuron pull’s library (local Hub answering as huggingface.co)', () => {
  it('takes Q4_K_M by default, resumes a cut connection by a range, packs what neuron publish takes', async () => {
    const data = join(dir, 'pull-default')
    hub.troubleNext('stories260K-Q4_K_M.gguf', { cutAfter: 300_000 })
    const before = hub.requests.length
    const logs: string[] = []
    const seen: number[] = []
    const pulled = await pullModel({
      ref: { repo: 'karpathy/stories260K-GGUF' },
      dataDir: data,
      config: config(TOKEN),
      retryDelayMs: 10,
      log: (l) => logs.push(l),
      onProgress: (p) => seen.push(p.downloadedBytes),
    })
    expect(pulled.model.name).toBe('stories260K-Q4_K_M')
    const cdn = hub.requests.slice(before).filter((r) => r.cdn)
    expect(cdn.map((r) => r.range)).toEqual([undefined, 'bytes=300000-'])
    expect(logs.join('\n')).toMatch(/resuming at 300000 of \d+ bytes/)
    // The token went to the Hub, never to the CDN it redirected to.
    expect(hub.requests.slice(before).some((r) => !r.cdn && r.authorization === `Bearer ${TOKEN}`)).toBe(true)
    expect(cdn.every((r) => r.authorization === undefined)).toBe(true)
    expect(
      createHash('sha256')
        .update(await readFile(pulled.gguf))
        .digest('hex'),
    ).toBe(createHash('sha256').update(model).digest('hex'))
    expect(seen.at(-1)).toBe(model.length)
    const manifest = await readManifest(pulled.packDir)
    expect(manifest.modelId).toBe('stories260k-q4_k_m')
    expect(manifest.artifacts.map((a) => a.sha256)).toEqual(wholeArtifacts)
    expect((await filesUnder(data)).filter((f) => f.endsWith('.part') || f.endsWith('.part.json'))).toEqual([])
  })

  it('refuses a download whose sha256 is not the Hub’s, fetches it again, keeps nothing after 2 bad', async () => {
    const data = join(dir, 'pull-corrupt')
    hub.troubleNext('stories260K-Q8_0.gguf', { corrupt: true })
    const logs: string[] = []
    const ref = { repo: 'karpathy/stories260K-GGUF', quant: 'Q8_0' }
    const pulled = await pullModel({ ref, dataDir: data, config: config(), log: (l) => logs.push(l) })
    expect(logs.join('\n')).toMatch(
      /stories260K-Q8_0\.gguf failed sha256 \(expected [0-9a-f]{12}…, got [0-9a-f]{12}…\); downloading it again/,
    )
    expect((await readFile(pulled.gguf)).equals(model)).toBe(true)

    const again = join(dir, 'pull-corrupt-twice')
    hub.troubleNext('stories260K-Q8_0.gguf', { corrupt: true }, { corrupt: true })
    const error = await rejected(pullModel({ ref, dataDir: again, config: config() }))
    expect(error.code).toBe('hub_checksum')
    expect(error.message).toMatch(/failed sha256 .* twice; nothing kept/)
    expect((await filesUnder(again)).filter((f) => f.includes('.gguf'))).toEqual([])
  })

  it('pulls a split model whole and packs it to the same artifacts as the unsplit file', async () => {
    const pulled = await pullModel({
      ref: { repo: 'karpathy/stories260K-split-GGUF' },
      dataDir: join(dir, 'pull-split'),
      config: config(),
    })
    expect(pulled.gguf).toMatch(/BF16\/stories260K-BF16-00001-of-00003\.gguf$/)
    const manifest = await readManifest(pulled.packDir)
    expect(manifest.modelId).toBe('stories260k-bf16')
    expect(manifest.source.bytes).toBe(pulled.model.bytes)
    expect(manifest.artifacts.map((a) => a.sha256)).toEqual(wholeArtifacts)
  })

  it('a gated model: without a token one line says to set HF_TOKEN, nothing is kept; with one it pulls', async () => {
    const data = join(dir, 'pull-gated')
    const ref = { repo: 'meta-llama/stories260K-gated-GGUF' }
    const error = await rejected(pullModel({ ref, dataDir: data, config: config() }))
    expect(error.code).toBe('hub_gated')
    expect(error.message).toMatch(/meta-llama\/stories260K-gated-GGUF is gated: set HF_TOKEN/)
    expect(error.message).not.toMatch(/\n/)
    expect((await filesUnder(data)).filter((f) => f.includes('.gguf'))).toEqual([])
    const wrong = await rejected(pullModel({ ref, dataDir: data, config: config('hf_no_access') }))
    expect(wrong.message).toMatch(
      /your HF_TOKEN has no access yet: accept its terms at http:\/\/127\.0\.0\.1:\d+\/meta-llama/,
    )
    const pulled = await pullModel({ ref, dataDir: data, config: config(TOKEN) })
    expect((await readFile(pulled.gguf)).equals(model)).toBe(true)
  })

  it('a 404 names the repository or the file, and a missing quantization lists those offered', async () => {
    const data = join(dir, 'pull-404')
    const noRepo = await rejected(
      pullModel({ ref: { repo: 'nobody/nothing-GGUF' }, dataDir: data, config: config(TOKEN) }),
    )
    expect(noRepo.message).toMatch(/^no model nobody\/nothing-GGUF on http:\/\/127\.0\.0\.1:\d+; check the name/)
    const anonymous = await rejected(
      pullModel({ ref: { repo: 'nobody/nothing-GGUF' }, dataDir: data, config: config() }),
    )
    expect(anonymous.message).toMatch(/nobody\/nothing-GGUF was not found .* or it is private or gated/)
    const noQuant = await rejected(
      pullModel({ ref: { repo: 'karpathy/stories260K-GGUF', quant: 'IQ2_XS' }, dataDir: data, config: config() }),
    )
    expect(noQuant.message).toBe('karpathy/stories260K-GGUF has no IQ2_XS model; it offers Q4_K_M, Q8_0')
    const noFile = await rejected(
      downloadHubFile({
        api: new HubApi(config()),
        repo: 'karpathy/stories260K-GGUF',
        revision: 'main',
        file: { path: 'gone.gguf', bytes: 10, sha256: '0'.repeat(64) },
        dir: data,
      }),
    )
    expect(noFile.code).toBe('hub_not_found')
    expect(noFile.message).toMatch(/^karpathy\/stories260K-GGUF has no file gone\.gguf/)
    expect((await filesUnder(data)).filter((f) => f.includes('.gguf'))).toEqual([])
  })

  it('a download stopped midway (the app closed) resumes from its part on the next pull', async () => {
    const data = join(dir, 'pull-restart')
    const ref = { repo: 'karpathy/stories260K-GGUF', quant: 'Q8_0' }
    const stop = new AbortController()
    hub.troubleNext('stories260K-Q8_0.gguf', { cutAfter: 400_000 })
    const first = await rejected(
      pullModel({
        ref,
        dataDir: data,
        config: config(),
        retryDelayMs: 60_000,
        signal: stop.signal,
        log: (l) => {
          if (/resuming at/.test(l)) stop.abort(new Error('app closed'))
        },
      }),
    )
    expect(first.message).toBe('app closed')
    const part = join(data, 'hub', 'karpathy', 'stories260K-GGUF', 'stories260K-Q8_0.gguf.part')
    expect((await stat(part)).size).toBe(400_000)
    const before = hub.requests.length
    const pulled = await pullModel({ ref, dataDir: data, config: config() })
    expect(hub.cdnRanges(before)).toEqual(['bytes=400000-'])
    expect((await readFile(pulled.gguf)).equals(model)).toBe(true)
  })
})
