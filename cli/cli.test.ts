import { execFile } from 'node:child_process'
import { copyFile, mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { connectTracker } from '../dataplane/tracker-connection'
import { readGguf } from '../gguf/reader'
import { serializeHeader } from '../gguf/writer'
import { NodeIdentity } from '../identity/keys'
import { buildUi } from '../test/build-ui'
import { HAVE_OPENSSL, NEEDS_OPENSSL, selfSignedCertificate } from '../test/certificates'
import { QWEN3_30B_A3B } from '../test/model-configs'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { Tracker } from '../tracker/server'

const NEURON = join(REPO_ROOT, 'bin/neuron.js')

function neuron(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [NEURON, ...args], { cwd: REPO_ROOT }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    })
  })
}

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('neuron command', () => {
  it('--help lists the commands, and each has its own --help with an example', async () => {
    const r = await neuron('--help')
    expect(r.code).toBe(0)
    for (const c of ['inspect', 'pack', 'gen-model']) {
      expect(r.stdout).toContain(c)
      const sub = await neuron(c, '--help')
      expect(sub.code).toBe(0)
      expect(sub.stdout).toMatch(/Example/)
    }
  })

  it('rejects an unknown command with a pointer to --help', async () => {
    const r = await neuron('fly')
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/unknown command "fly".*--help/)
  })

  it('gen-model refuses impossible shapes with one clear line', async () => {
    const out = join(dir, 'never.gguf')
    const base = [
      'gen-model',
      '--arch',
      'llama',
      '--blocks',
      '2',
      '--heads',
      '4',
      '--ff',
      '128',
      '--vocab',
      '300',
      '--out',
      out,
    ]
    const odd = await neuron(...base, '--embd', '48', '--type', 'q8_0')
    expect(odd.code).toBe(1)
    expect(odd.stderr.trim().split('\n')).toHaveLength(1)
    expect(odd.stderr).toMatch(/multiples of 32/)
    const badType = await neuron(...base, '--embd', '64', '--type', 'q5_k')
    expect(badType.stderr).toMatch(/--type must be one of f32, f16, q8_0, q4_0/)
    expect(await readdir(dir)).not.toContain('never.gguf')
  })

  it('still takes --layers, the old name of --blocks, and says it is an alias', async () => {
    const out = join(dir, 'never.gguf')
    const r = await neuron(
      'gen-model',
      '--arch',
      'llama',
      '--layers',
      '2',
      '--heads',
      '4',
      '--ff',
      '128',
      '--vocab',
      '300',
      '--out',
      out,
      '--embd',
      '48',
      '--type',
      'q8_0',
    )
    expect(r.stderr).toMatch(/--layers is an alias of --blocks; say --blocks 2/)
    expect(r.stderr).toMatch(/multiples of 32/)
  })

  it('gen-model refuses expert shapes llama.cpp would abort on, with one clear line', async () => {
    const out = join(dir, 'never.gguf')
    const base = [
      'gen-model',
      '--arch',
      'deepseek2',
      '--blocks',
      '3',
      '--embd',
      '256',
      '--heads',
      '4',
      '--ff',
      '256',
      '--vocab',
      '300',
      '--type',
      'q4_K_M',
    ]
    const groups = await neuron(...base, '--experts', '6', '--expert-groups', '4', '--out', out)
    expect(groups.code).toBe(1)
    expect(groups.stderr.trim().split('\n')).toHaveLength(1)
    expect(groups.stderr).toMatch(/--experts \(6\) must split into --expert-groups \(4\) of at least 2 experts each/)
    const wrongArch = await neuron(
      'gen-model',
      '--arch',
      'qwen3moe',
      ...base.slice(3),
      '--sliding-window',
      '64',
      '--out',
      out,
    )
    expect(wrongArch.stderr.trim()).toMatch(
      /--sliding-window does not apply to qwen3moe; it takes --experts --experts-used --expert-ff\.$/,
    )
    expect(await readdir(dir)).not.toContain('never.gguf')
  })

  it(
    'gen-model refuses qwen35moe, glm-dsa and deepseek4 shapes ' + 'llama.cpp would abort on, with one clear line each',
    async () => {
      const out = join(dir, 'never.gguf')
      const shape = [
        '--blocks',
        '4',
        '--embd',
        '256',
        '--heads',
        '4',
        '--ff',
        '256',
        '--vocab',
        '300',
        '--type',
        'f16',
        '--out',
        out,
      ]
      const cases: [string[], RegExp][] = [
        [
          ['qwen35moe', '--full-attention-interval', '5'],
          new RegExp(
            String.raw`^neuron gen-model: error \[\w+\]: --full-attention-interval must be 1 to --blocks \(4\) ` +
              String.raw`so some block has full attention, not 5\.$`,
          ),
        ],
        [
          ['glm-dsa', '--indexer-head-size', '32'],
          new RegExp(
            String.raw`^neuron gen-model: error \[\w+\]: --indexer-head-size must be a power of two of at least 64 ` +
              String.raw`for glm-dsa, not 32\.$`,
          ),
        ],
        [
          ['deepseek4', '--compress-ratios', '0,4,4,0'],
          /^neuron gen-model: error \[\w+\]: --compress-ratios \(0,4,4,0\) needs at least one 4 and one 128 block/,
        ],
        [
          ['deepseek4', '--compress-ratios', '4,128,8,0'],
          /^neuron gen-model: error \[\w+\]: --compress-ratios takes only 0, 4 and 128/,
        ],
      ]
      for (const [[arch, ...flags], message] of cases) {
        const r = await neuron('gen-model', '--arch', arch as string, ...shape, ...flags)
        expect(r.code, r.stderr).toBe(1)
        expect(r.stderr.trim().split('\n')).toHaveLength(1)
        expect(r.stderr.trim()).toMatch(message)
      }
      expect(await readdir(dir)).not.toContain('never.gguf')
    },
  )
})

describe('neuron account', () => {
  it('creates an account in a running tracker’s database whose key the gateway accepts', async () => {
    const db = join(dir, 'accounts.sqlite')
    const tracker = await Tracker.start({ dbPath: db })
    try {
      const r = await neuron('account', 'create', '--db', db, '--name', 'me', '--grant-micro', '5000000')
      expect(r.code).toBe(0)
      const created = JSON.parse(r.stdout) as { api_key: string; grant_micro: number; name: string }
      expect(created).toMatchObject({ name: 'me', grant_micro: 5_000_000, api_key: expect.stringMatching(/^nk-/) })
      const models = await fetch(`${tracker.url}/v1/models`, {
        headers: { authorization: `Bearer ${created.api_key}` },
      })
      expect(models.status).toBe(200)
      const wrong = await fetch(`${tracker.url}/v1/models`, { headers: { authorization: 'Bearer nk-not-a-key' } })
      expect(wrong.status).toBe(401)
    } finally {
      await tracker.close()
    }
    const missing = await neuron('account', 'create', '--db', join(dir, 'no-such.sqlite'))
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/no-such\.sqlite does not exist/)
  })
})

describe('neuron host --ui', () => {
  it(
    'serves the app to a browser for a headless host on ' + 'a remote tracker, behind the key in the printed link',
    async () => {
      await buildUi()
      const tracker = await Tracker.start({ dbPath: join(dir, 'ui-tracker.sqlite') })
      const host = startNeuron([
        'host',
        '--ui',
        '--tracker',
        tracker.url,
        '--data-dir',
        join(dir, 'ui-host'),
        '--port',
        '0',
        '--threads',
        '1',
      ])
      try {
        const link = new URL(
          (await host.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/))[1] ?? '',
        )
        expect((await fetch(link.origin, { redirect: 'manual' })).status).toBe(401)
        const opened = await fetch(link, { redirect: 'manual' })
        expect(opened.status).toBe(303)
        const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
        const page = await fetch(link.origin, { headers: { cookie } })
        expect(page.status).toBe(200)
        expect(await page.text()).toContain('<div id="root">')
        // The same contract as the app: this host's settings name the tracker it joined.
        const ws = new WebSocket(`ws://${link.host}/api`, { origin: link.origin, headers: { cookie } })
        const reply = await new Promise<unknown>((resolve, reject) => {
          ws.once('open', () => ws.send(JSON.stringify({ kind: 'call', id: 1, method: 'settings.get', input: {} })))
          ws.once('message', (data) => resolve(JSON.parse(data.toString())))
          ws.once('error', reject)
        })
        ws.close()
        expect(reply).toMatchObject({
          kind: 'reply',
          id: 1,
          ok: true,
          value: { trackerUrl: tracker.url, connectedTrackerUrl: tracker.url },
        })
      } finally {
        await host.stop(5000)
        await tracker.close()
      }
    },
  )
})

describe('neuron inspect --config', () => {
  it('sizes a model from its config.json alone: Qwen3-30B-A3B at Q4_K_M', async () => {
    const config = join(dir, 'Qwen3-30B-A3B', 'config.json')
    await mkdir(join(dir, 'Qwen3-30B-A3B'))
    await writeFile(config, JSON.stringify(QWEN3_30B_A3B))
    const r = await neuron('inspect', '--config', config)
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('Qwen3-30B-A3B — qwen3moe, 48 blocks')
    expect(r.stdout).toContain('48 × 335.1 MiB–384.9 MiB')
    expect(r.stdout).toContain('cache (f16)   blocks 0–47: 2.00 KiB/token (KV)')
  })
})

describe(`inspect and pack on stories260K`, () => {
  it('inspect --json reports the architecture, sizes per block and KV cost', async () => {
    const r = await neuron('inspect', STORIES_260K, '--json')
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.architecture).toBe('llama')
    expect(report.hparams).toMatchObject({ nLayer: 5, nEmbd: 64, nHead: 8, nHeadKv: 4, nVocab: 512 })
    expect(report.bytesPerBlock).toHaveLength(5)
    // 4 KV heads × (8 + 8) dims × 2 bytes (f16)
    expect(report.kvBytesPerTokenPerBlock).toBe(128)
    expect(report.tensorTypes).toEqual({ F32: { tensors: 48, bytes: report.tensorBytes } })
    expect(report.cachePerBlock).toEqual(Array(5).fill({ kind: 'kv', bytesPerToken: 128 }))
    const text = await neuron('inspect', STORIES_260K)
    expect(text.stdout).toContain('cache (f16)   blocks 0–4: 128 B/token (KV)')
  })

  it('pack prints the artifacts it wrote', async () => {
    const r = await neuron('pack', STORIES_260K, '--out', join(dir, 'cli-pack'), '--blocks-per-artifact', '2')
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/blocks-2-4\.gguf\s+blocks \[2, 4\)/)
    expect((await readdir(join(dir, 'cli-pack'))).sort()).toEqual([
      'blocks-0-2.gguf',
      'blocks-2-4.gguf',
      'blocks-4-5.gguf',
      'embed.gguf',
      'head.gguf',
      'manifest.json',
    ])
  })

  describe('bad input: one clear message, a non-zero exit, no partial output', () => {
    async function expectRefused(input: string, pattern: RegExp, out = join(dir, 'refused', 'out')) {
      await mkdir(join(dir, 'refused'), { recursive: true })
      const before = await readdir(join(dir, 'refused'))
      const r = await neuron('pack', input, '--out', out)
      expect(r.code).toBe(1)
      expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1)
      expect(r.stderr).toMatch(pattern)
      expect(await readdir(join(dir, 'refused'))).toEqual(before)
    }

    it('a GGUF cut short inside its tensor data', async () => {
      const cut = join(dir, 'cut-data.gguf')
      await writeFile(cut, (await readFile(STORIES_260K)).subarray(0, 600_000))
      await expectRefused(cut, /is truncated: tensor blk\.\d\.\S+ needs bytes \[\d+, \d+\) but the file ends at 600000/)
    })

    it('a GGUF cut short inside its header', async () => {
      const cut = join(dir, 'cut-header.gguf')
      await writeFile(cut, (await readFile(STORIES_260K)).subarray(0, 5000))
      await expectRefused(cut, /is truncated/)
    })

    it('a file that is not GGUF', async () => {
      const text = join(dir, 'notes.gguf')
      await writeFile(text, 'just some notes\n')
      await expectRefused(text, /is not a GGUF file: it starts with 6a 75 73 74, not "GGUF"/)
    })

    it('an unsupported GGUF version', async () => {
      const v1 = join(dir, 'v1.gguf')
      const bytes = await readFile(STORIES_260K)
      bytes.writeUInt32LE(1, 4)
      await writeFile(v1, bytes)
      await expectRefused(v1, /is GGUF version 1; Neuron reads versions 2 and 3/)
    })

    it('a model missing one block tensor', async () => {
      const source = await readGguf(STORIES_260K)
      const kept = source.tensors.filter((t) => t.name !== 'blk.3.attn_k.weight')
      const header = serializeHeader(source.kvs, kept, source.alignment)
      const holed = join(dir, 'holed.gguf')
      const all = await readFile(STORIES_260K)
      const fh = await open(holed, 'w')
      await fh.write(header.bytes, 0, header.bytes.length, 0)
      for (const [i, t] of kept.entries())
        await fh.write(all, t.offset, t.bytes, header.bytes.length + (header.dataOffsets[i] ?? 0))
      await fh.close()
      await expectRefused(holed, /is missing tensor blk\.3\.attn_k\.weight \(block 3\)/)
    })

    it('an output directory that already exists', async () => {
      const out = join(dir, 'refused', 'taken')
      await mkdir(out, { recursive: true })
      const copy = join(dir, 'fine.gguf')
      await copyFile(STORIES_260K, copy)
      await expectRefused(copy, /taken already exists; choose a new --out/, out)
      expect(await readdir(out)).toEqual([])
    })
  })
})

describe('neuron tracker --allow-keys and --tls-key/--tls-cert', () => {
  it('refuses a keys file with a bad line in one line naming the file and the line', async () => {
    const file = join(dir, 'bad-keys.txt')
    await writeFile(file, `# the team\n${NodeIdentity.generate().publicKey}  # ada\nnot-a-key\n`)
    const empty = join(dir, 'empty-keys.txt')
    await writeFile(empty, '# nobody yet\n')
    const db = join(dir, 'never.sqlite')
    const [bad, none, half] = await Promise.all([
      neuron('tracker', '--port', '0', '--db', db, '--allow-keys', file),
      neuron('tracker', '--port', '0', '--db', db, '--allow-keys', empty),
      neuron('tracker', '--port', '0', '--db', db, '--tls-key', file),
    ])
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim().split('\n')).toHaveLength(1)
    expect(bad.stderr).toContain(`--allow-keys ${file} line 3: "not-a-key" is not a public key`)
    expect(none.stderr).toMatch(/lists no keys/)
    expect(half.stderr).toMatch(/--tls-key and --tls-cert go together/)
  })

  describe.skipIf(!HAVE_OPENSSL)(`a running private tracker over https${NEEDS_OPENSSL}`, () => {
    let tracker: NeuronProcess | undefined
    afterAll(async () => tracker?.stop())

    it('admits the listed key and refuses any other', async () => {
      const certificate = await selfSignedCertificate(dir)
      const member = NodeIdentity.generate()
      const file = join(dir, 'keys.txt')
      await writeFile(file, `${member.publicKey}\n`)
      tracker = startNeuron([
        'tracker',
        '--port',
        '0',
        '--db',
        join(dir, 'tracker.sqlite'),
        '--allow-keys',
        file,
        '--tls-key',
        certificate.keyPath,
        '--tls-cert',
        certificate.certPath,
      ])
      const url = (await tracker.waitFor(/tracker listening on (https:\/\/127\.0\.0\.1:\d+)/))[1] as string
      const ca = certificate.cert
      const socket = await connectTracker(url, '/clients', member, { ca })
      socket.close()
      await expect(connectTracker(url, '/hosts', NodeIdentity.generate(), { ca })).rejects.toMatchObject({
        code: 'not_admitted',
      })
    })
  })
})
