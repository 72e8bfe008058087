import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oracleModel } from '../native/oracle'
import { cutAllowed, seamBytesPerToken } from '../protocol'
import { greedyInChild } from '../test/greedy'
import { scratchDir } from '../test/models'
import { generateThroughRoute, packedPool } from '../test/native'
import { type GeneratedArch, generateModel } from './generate'
import { GGML_TYPES, GgmlTypeId } from './ggml-types'
import { describeModel } from './model'
import { packModel } from './pack'
import { type GgufKv, GgufValueType, kvValue, readGguf } from './reader'
import { serializeHeader } from './writer'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

const SHAPE = { blocks: 5, embd: 256, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 1, type: 'f16' } as const

/** A generated model of `arch`, its GGUF keys (without the arch prefix) and what describeModel makes of it. */
async function described(arch: GeneratedArch) {
  const out = join(dir, `${arch}.gguf`)
  await generateModel({ ...SHAPE, arch, out })
  const file = await readGguf(out)
  const prefix = String(kvValue(file, 'general.architecture'))
  const key = (k: string) => kvValue(file, `${prefix}.${k}`)
  return { model: describeModel(file), key, num: (k: string) => Number(key(k)) }
}

describe('a GGUF of a large-target family states its caches and seams as llama.cpp reads its keys', () => {
  it(
    'deepseek4: 4 hyper-connection streams cross every cut, token ids before the hash-routed blocks; a window ' +
      'beside compressed keys',
    async () => {
      const { model, key, num } = await described('deepseek4')
      const hc = num('hyper_connection.count')
      const hash = num('hash_layer_count')
      const ratios = key('attention.compress_ratios') as number[]
      for (let b = 1; b < 5; b++)
        expect(seamBytesPerToken({ ...model.hparams, seams: model.seams }, b)).toBe(hc * 256 * 2 + (b < hash ? 4 : 0))
      const keyBytes = num('attention.key_length') * 2
      model.cachePerBlock.forEach((cache, il) => {
        const ratio = Number(ratios[il])
        if (ratio === 0) expect(cache).toMatchObject({ kind: 'window', bytesPerToken: keyBytes })
        else
          expect(cache).toMatchObject({
            kind: 'latent',
            recent: { bytesPerToken: keyBytes },
            fixedBytes: expect.any(Number),
          })
      })
    },
  )

  it(
    'glm-dsa: a cut before a shared-indexer block carries ' + 'its top-k indices; full blocks cache indexer keys too',
    async () => {
      const { model, key, num } = await described('glm-dsa')
      const types = key('attention.indexer.types') as number[]
      const topK = num('attention.indexer.top_k')
      for (let b = 1; b < 5; b++)
        expect(seamBytesPerToken({ ...model.hparams, seams: model.seams }, b)).toBe(
          256 * 2 + (Number(types[b]) === 0 ? 4 * topK : 0),
        )
      // The packed manifest states them; a model whose seams are
      // all plain (qwen35moe below) keeps the manifest as before.
      expect(
        (await packModel({ source: join(dir, 'glm-dsa.gguf'), out: join(dir, 'glm-dsa-pack'), blocksPerArtifact: 2 }))
          .seams,
      ).toEqual(model.seams)
      const latent = (num('attention.kv_lora_rank') + num('rope.dimension_count')) * 2
      expect(model.cachePerBlock.map((c) => c.bytesPerToken)).toEqual(
        types.map((t) => latent + (Number(t) === 0 ? 0 : num('attention.indexer.key_length') * 2)),
      )
    },
  )

  it(
    'qwen35moe: delta-net blocks hold only fixed f32 state ' + 'per session, the hidden state alone crosses each cut',
    async () => {
      const { model, num } = await described('qwen35moe')
      const interval = num('full_attention_interval')
      const [kernel, inner, state, groups] = ['conv_kernel', 'inner_size', 'state_size', 'group_count'].map((k) =>
        num(`ssm.${k}`),
      ) as [number, number, number, number]
      const fixedBytes = 4 * ((kernel - 1) * (inner + 2 * groups * state) + state * inner)
      model.cachePerBlock.forEach((cache, il) => {
        if ((il + 1) % interval !== 0) expect(cache).toEqual({ kind: 'kv', bytesPerToken: 0, fixedBytes })
        else expect(cache.bytesPerToken).toBeGreaterThan(0)
      })
      expect(
        (
          await packModel({
            source: join(dir, 'qwen35moe.gguf'),
            out: join(dir, 'qwen35moe-pack'),
            blocksPerArtifact: 2,
          })
        ).seams,
      ).toBeUndefined()
      expect(
        model.seams.every(
          (s) =>
            s.values === 256 &&
            !s.tokenIds &&
            s.int32PerToken === 0 &&
            cutAllowed({ nLayer: 5, seams: model.seams }, 2),
        ),
      ).toBe(true)
    },
  )
})

/**
 * The file with its last block made an MTP (next-token prediction)
 * block, as converted GLM-5 and Qwen3.5 files have one:
 * `nextn_predict_layers` 1, the block's nextn.* tensors (eh_proj,
 * enorm, hnorm) added, per-block arrays of served blocks.
 */
async function withMtpBlock(path: string, out: string): Promise<void> {
  const file = await readGguf(path)
  const prefix = String(kvValue(file, 'general.architecture'))
  const served = Number(kvValue(file, `${prefix}.block_count`)) - 1
  const kvs = file.kvs.flatMap((kv): GgufKv[] => {
    if (kv.key === `${prefix}.block_count`)
      return [kv, { key: `${prefix}.nextn_predict_layers`, type: GgufValueType.UINT32, value: 1 }]
    if (kv.key === `${prefix}.attention.indexer.types`)
      return [{ ...kv, value: (kv.value as number[]).slice(0, served) }]
    return [kv]
  })
  const f32 = GGML_TYPES.get(GgmlTypeId.F32)
  if (f32 === undefined) throw new Error('no f32 type')
  const E = SHAPE.embd
  const mtp = [
    { name: `blk.${served}.nextn.eh_proj.weight`, shape: [2 * E, E] },
    { name: `blk.${served}.nextn.enorm.weight`, shape: [E] },
    { name: `blk.${served}.nextn.hnorm.weight`, shape: [E] },
  ].map((t) => ({ ...t, type: f32, bytes: 4 * t.shape.reduce((a, b) => a * b, 1) }))
  const tensors = [...file.tensors, ...mtp]
  const header = serializeHeader(kvs, tensors, file.alignment)
  const bytes = await readFile(path)
  const body = Buffer.alloc(header.fileBytes - header.bytes.length)
  for (const [i, t] of file.tensors.entries())
    bytes.copy(body, header.dataOffsets[i] ?? 0, t.offset, t.offset + t.bytes)
  await writeFile(out, Buffer.concat([header.bytes, body]))
}

describe('a GGUF with MTP blocks is served without them, as llama.cpp and the runtime run it', () => {
  it(
    'glm-dsa: describe and pack name block_count less nextn_predict_layers; no artifact carries the MTP block; ' +
      'the pack continues a prompt as llama.cpp',
    async () => {
      // six generated blocks, the last made MTP; the same seed's five-block model has the same five served blocks
      await generateModel({ ...SHAPE, blocks: 6, arch: 'glm-dsa', out: join(dir, 'glm-dsa-6.gguf') })
      await generateModel({ ...SHAPE, arch: 'glm-dsa', out: join(dir, 'glm-dsa-5.gguf') })
      const source = join(dir, 'glm-dsa-mtp.gguf')
      await withMtpBlock(join(dir, 'glm-dsa-6.gguf'), source)
      const model = describeModel(await readGguf(source))
      expect([
        model.hparams.nLayer,
        model.blocks.length,
        model.bytesPerBlock.length,
        model.cachePerBlock.length,
        model.seams.length,
      ]).toEqual([5, 5, 5, 5, 4])
      expect(model.mtp.length).toBeGreaterThan(3)
      expect(model.mtp.every((t) => t.name.startsWith('blk.5.'))).toBe(true)
      const plain = describeModel(await readGguf(join(dir, 'glm-dsa-5.gguf')))
      expect([model.bytesPerBlock, model.cachePerBlock, model.seams]).toEqual([
        plain.bytesPerBlock,
        plain.cachePerBlock,
        plain.seams,
      ])

      const out = join(dir, 'glm-dsa-mtp-pack')
      const manifest = await packModel({ source, out, blocksPerArtifact: 2 })
      expect(manifest.nLayer).toBe(5)
      expect(manifest.artifacts.map((a) => a.blocks)).toEqual([null, [0, 2], [2, 4], [4, 5], null])
      expect(manifest.artifacts.flatMap((a) => a.tensors).filter((t) => t.startsWith('blk.5.'))).toEqual([])

      // llama.cpp loads the MTP file (skipping the block) and gives
      // the plain five-block model's tokens; so does the pack
      const [withMtp, without] = await greedyInChild([source, join(dir, 'glm-dsa-5.gguf')], 8)
      expect(withMtp?.tokens).toEqual(without?.tokens)
      const tokenizer = await oracleModel(join(dir, 'glm-dsa-5.gguf'))
      const prompt = tokenizer.tokenize('Once upon a time')
      await tokenizer.dispose()
      const pool = packedPool(manifest, out)
      try {
        expect((await generateThroughRoute(pool, [[0, 5]], prompt, 8)).map((s) => s.token)).toEqual(withMtp?.tokens)
      } finally {
        await pool.dispose()
      }
    },
  )
})
