import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Manifest } from '../protocol'
import { STORIES_260K, scratchDir } from '../test/models'
import { generateModel } from './generate'
import { packModel } from './pack'
import { type GgufFile, readGguf } from './reader'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

async function tensorData(file: GgufFile, name: string): Promise<Buffer> {
  const t = file.tensors.find((x) => x.name === name)
  if (t === undefined) throw new Error(`${file.path} has no ${name}`)
  const all = await readFile(file.path)
  return all.subarray(t.offset, t.offset + t.bytes)
}

describe(`pack stories260K into artifacts`, () => {
  it(
    'writes embed, blocks [0,2) [2,4) [4,5), head and a ' + 'manifest whose tensors equal the source byte for byte',
    async () => {
      const out = join(dir, 'stories')
      const manifest = await packModel({ source: STORIES_260K, out, blocksPerArtifact: 2 })

      expect(manifest.artifacts.map((a) => [a.role, a.blocks])).toEqual([
        ['embed', null],
        ['blocks', [0, 2]],
        ['blocks', [2, 4]],
        ['blocks', [4, 5]],
        ['head', null],
      ])
      const onDisk = Manifest.parse(JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8')))
      expect(onDisk).toEqual(manifest)
      // Each block states its own cache: stories260K's 4 KV heads × (8 + 8) × 2 bytes
      expect(onDisk.cachePerBlock).toEqual(Array(5).fill({ kind: 'kv', bytesPerToken: 128 }))
      expect((await readdir(out)).sort()).toEqual([...manifest.artifacts.map((a) => a.file), 'manifest.json'].sort())

      const source = await readGguf(STORIES_260K)
      expect(manifest.source.sha256).toBe(
        createHash('sha256')
          .update(await readFile(STORIES_260K))
          .digest('hex'),
      )
      const seen = new Map<string, string>()
      for (const artifact of manifest.artifacts) {
        const bytes = await readFile(join(out, artifact.file))
        expect(bytes.length).toBe(artifact.bytes)
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(artifact.sha256)
        const file = await readGguf(join(out, artifact.file))
        // Every artifact carries the source's full metadata (tokenizer included), then neuron.* keys.
        expect(file.kvs.slice(0, source.kvs.length)).toEqual(source.kvs)
        const neuron = Object.fromEntries(
          file.kvs.filter((kv) => kv.key.startsWith('neuron.')).map((kv) => [kv.key, kv.value]),
        )
        expect(neuron['neuron.role']).toBe(artifact.role)
        expect([neuron['neuron.block_begin'], neuron['neuron.block_end']]).toEqual(artifact.blocks ?? [0, 0])
        expect(file.tensors.map((t) => t.name)).toEqual(artifact.tensors)
        for (const t of file.tensors) {
          expect(seen.has(t.name), `${t.name} appears in two artifacts`).toBe(false)
          seen.set(t.name, artifact.file)
          const original = source.tensors.find((s) => s.name === t.name)
          expect(original, `${t.name} is not in the source`).toBeDefined()
          expect([t.type.name, t.shape]).toEqual([original?.type.name, original?.shape])
          expect(
            (await tensorData(file, t.name)).equals(await tensorData(source, t.name)),
            `${t.name} data differs`,
          ).toBe(true)
        }
      }
      expect([...seen.keys()].sort()).toEqual(source.tensors.map((t) => t.name).sort())
    },
  )

  it('is deterministic: packing twice gives identical sha256s and bytes', async () => {
    const a = await packModel({ source: STORIES_260K, out: join(dir, 'twice-a'), blocksPerArtifact: 2 })
    const b = await packModel({ source: STORIES_260K, out: join(dir, 'twice-b'), blocksPerArtifact: 2 })
    expect(b.artifacts.map((x) => x.sha256)).toEqual(a.artifacts.map((x) => x.sha256))
    expect(JSON.stringify(b)).toBe(JSON.stringify(a))
    const again = await readFile(join(dir, 'twice-b', 'head.gguf'))
    expect(again.equals(await readFile(join(dir, 'twice-a', 'head.gguf')))).toBe(true)
  })

  it('groups whole blocks under --max-artifact-bytes, one block at least', async () => {
    const oneBlock = (await readGguf(STORIES_260K)).tensors
      .filter((t) => t.name.startsWith('blk.0.'))
      .reduce((s, t) => s + t.bytes, 0)
    const m = await packModel({ source: STORIES_260K, out: join(dir, 'by-bytes'), maxArtifactBytes: 3 * oneBlock })
    expect(m.artifacts.filter((a) => a.role === 'blocks').map((a) => a.blocks)).toEqual([
      [0, 3],
      [3, 5],
    ])
    const tiny = await packModel({ source: STORIES_260K, out: join(dir, 'by-bytes-tiny'), maxArtifactBytes: 1 })
    expect(tiny.artifacts.filter((a) => a.role === 'blocks')).toHaveLength(5)
  })
})

describe('pack a tied-embedding model', () => {
  it('puts the token embedding in the head too, since the head computes logits with it', async () => {
    const source = join(dir, 'tied.gguf')
    await generateModel({
      arch: 'qwen3',
      blocks: 2,
      embd: 64,
      heads: 4,
      kvHeads: 2,
      ff: 128,
      vocab: 300,
      type: 'q8_0',
      seed: 3,
      out: source,
      tied: true,
    })
    const m = await packModel({ source, out: join(dir, 'tied') })
    expect(m.tiedEmbeddings).toBe(true)
    const head = m.artifacts.find((a) => a.role === 'head')
    expect(head?.tensors).toEqual(['output_norm.weight', 'token_embd.weight'])
    const src = await readGguf(source)
    const headFile = await readGguf(join(dir, 'tied', 'head.gguf'))
    expect((await tensorData(headFile, 'token_embd.weight')).equals(await tensorData(src, 'token_embd.weight'))).toBe(
      true,
    )
  })
})
