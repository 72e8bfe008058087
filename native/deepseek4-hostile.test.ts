// deepseek4's hostile metadata and tensors (models: test/deepseek4-models.ts): each refused with a typed error.
import { readFile, writeFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readGguf } from '../gguf/reader'
import { deepseek4Models } from '../test/deepseek4-models'
import { ShardRuntime } from './shard-runtime'

let cleanup: () => Promise<void> = async () => {}
let paths: Record<string, string> = {}

beforeAll(async () => {
  ;({ cleanup, paths } = await deepseek4Models(['q8_0']))
}, 120_000)
afterAll(() => cleanup())

describe('deepseek4: hostile artifacts are refused with a typed error, and the process keeps serving', () => {
  /** A copy of `source` with a u32 (or the first element of a u32 array) of `key` set to `value`. */
  async function patched(source: string, key: string, value: number, element = -1): Promise<string> {
    const bytes = await readFile(source)
    const at = bytes.indexOf(Buffer.from(`deepseek4.${key}`)) + `deepseek4.${key}`.length
    // a u32 (type 4), or an array (type 9) of u32 with a u64 count
    const where = element < 0 ? at + 4 : at + 4 + 4 + 8 + 4 * element
    expect(bytes.readUInt32LE(at)).toBe(element < 0 ? 4 : 9)
    bytes.writeUInt32LE(value, where)
    const out = `${source}.${key}-${element}-${value}.gguf`
    await writeFile(out, bytes)
    return out
  }

  it('stream counts, ratios, groups, hash blocks, scoring and hash tables the graph cannot take', async () => {
    const path = paths.q8_0 as string
    const load = (file: string) =>
      ShardRuntime.load({ artifacts: [file], blocks: [0, 4], embed: true, head: true, threads: 1, device: 'cpu' })
    await expect(load(await patched(path, 'hyper_connection.count', 3))).rejects.toMatchObject({ code: 'BAD_METADATA' })
    await expect(load(await patched(path, 'hash_layer_count', 5))).rejects.toMatchObject({ code: 'BAD_METADATA' })
    await expect(load(await patched(path, 'attention.output_group_count', 3))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    await expect(load(await patched(path, 'attention.indexer.top_k', 0))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    await expect(load(await patched(path, 'expert_gating_func', 1))).rejects.toMatchObject({
      code: 'UNSUPPORTED_MODEL',
    })
    await expect(load(await patched(path, 'attention.compress_ratios', 8, 1))).rejects.toMatchObject({
      code: 'BAD_METADATA',
    })
    // block 1 made window-only: its compressor tensors are no longer the shapes the metadata implies, or extra
    await expect(load(await patched(path, 'attention.compress_ratios', 128, 1))).rejects.toMatchObject({
      code: 'BAD_TENSOR',
    })
    // a token id -> experts table naming expert 8 of 8 would abort in the experts' matmul
    const table = (await readGguf(path)).tensors.find((t) => t.name === 'blk.1.ffn_gate_tid2eid.weight')
    const bytes = await readFile(path)
    bytes.writeInt32LE(8, (table?.offset ?? 0) + 4 * 17)
    const badTable = `${path}.tid2eid.gguf`
    await writeFile(badTable, bytes)
    await expect(load(badTable)).rejects.toMatchObject({
      code: 'BAD_TENSOR',
      message: expect.stringMatching(/names expert 8 of 8/),
    })
    const runtime = await load(path)
    const session = runtime.openSession({ maxTokens: 16 })
    expect((await session.forward(Int32Array.of(1, 2, 3))).kind).toBe('logits')
    session.close()
    runtime.dispose()
  })
})
