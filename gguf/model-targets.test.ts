import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cutAllowed, seamBytesPerToken } from '../protocol'
import { scratchDir } from '../test/models'
import { type GeneratedArch, generateModel } from './generate'
import { describeModel } from './model'
import { packModel } from './pack'
import { kvValue, readGguf } from './reader'

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
  it('deepseek4: 4 hyper-connection streams cross every cut, token ids before the hash-routed blocks; a window beside compressed keys', async () => {
    const { model, key, num } = await described('deepseek4')
    const hc = num('hyper_connection.count')
    const hash = num('hash_layer_count')
    const ratios = key('attention.compress_ratios') as number[]
    for (let b = 1; b < 5; b++) expect(seamBytesPerToken({ ...model.hparams, seams: model.seams }, b)).toBe(hc * 256 * 2 + (b < hash ? 4 : 0))
    const keyBytes = num('attention.key_length') * 2
    model.cachePerBlock.forEach((cache, il) => {
      const ratio = Number(ratios[il])
      if (ratio === 0) expect(cache).toMatchObject({ kind: 'window', bytesPerToken: keyBytes })
      else expect(cache).toMatchObject({ kind: 'latent', recent: { bytesPerToken: keyBytes }, fixedBytes: expect.any(Number) })
    })
  })

  it('glm-dsa: a cut before a shared-indexer block carries its top-k indices; full blocks cache indexer keys too', async () => {
    const { model, key, num } = await described('glm-dsa')
    const types = key('attention.indexer.types') as number[]
    const topK = num('attention.indexer.top_k')
    for (let b = 1; b < 5; b++) expect(seamBytesPerToken({ ...model.hparams, seams: model.seams }, b)).toBe(256 * 2 + (Number(types[b]) === 0 ? 4 * topK : 0))
    // The packed manifest states them; a model whose seams are all plain (qwen35moe below) keeps the manifest as before.
    expect((await packModel({ source: join(dir, 'glm-dsa.gguf'), out: join(dir, 'glm-dsa-pack'), blocksPerArtifact: 2 })).seams).toEqual(model.seams)
    const latent = (num('attention.kv_lora_rank') + num('rope.dimension_count')) * 2
    expect(model.cachePerBlock.map((c) => c.bytesPerToken)).toEqual(types.map((t) => latent + (Number(t) === 0 ? 0 : num('attention.indexer.key_length') * 2)))
  })

  it('qwen35moe: delta-net blocks hold only fixed f32 state per session, the hidden state alone crosses each cut', async () => {
    const { model, num } = await described('qwen35moe')
    const interval = num('full_attention_interval')
    const [kernel, inner, state, groups] = ['conv_kernel', 'inner_size', 'state_size', 'group_count'].map((k) => num(`ssm.${k}`)) as [
      number,
      number,
      number,
      number,
    ]
    const fixedBytes = 4 * ((kernel - 1) * (inner + 2 * groups * state) + state * inner)
    model.cachePerBlock.forEach((cache, il) => {
      if ((il + 1) % interval !== 0) expect(cache).toEqual({ kind: 'kv', bytesPerToken: 0, fixedBytes })
      else expect(cache.bytesPerToken).toBeGreaterThan(0)
    })
    expect((await packModel({ source: join(dir, 'qwen35moe.gguf'), out: join(dir, 'qwen35moe-pack'), blocksPerArtifact: 2 })).seams).toBeUndefined()
    expect(model.seams.every((s) => s.values === 256 && !s.tokenIds && s.int32PerToken === 0 && cutAllowed({ nLayer: 5, seams: model.seams }, 2))).toBe(true)
  })
})
