// `neuron inspect` and `neuron pack`: a model sized from its config.json, and stories260K inspected and packed.
import { copyFile, mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readGguf } from '../gguf/reader'
import { serializeHeader } from '../gguf/writer'
import { QWEN3_30B_A3B } from '../test/model-configs'
import { STORIES_260K, scratchDir } from '../test/models'
import { neuron } from '../test/neuron-command'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

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
