import { describe, expect, it } from 'vitest'
import { GGML_TYPES } from './ggml-types'
import { formatCache } from './inspect'
import { describeModel } from './model'
import { type GgufFile, type GgufTensor, GgufValueType } from './reader'

const F32 = GGML_TYPES.get(0)
if (F32 === undefined) throw new Error('ggml type table lacks F32')

const LLAMA_BLOCK = [
  'attn_norm',
  'attn_q',
  'attn_k',
  'attn_v',
  'attn_output',
  'ffn_norm',
  'ffn_gate',
  'ffn_down',
  'ffn_up',
].map((t) => `${t}.weight`)
const MOE_BLOCK = [
  ...LLAMA_BLOCK.filter((t) => !/ffn_(gate|down|up)\./.test(t)),
  'ffn_gate_inp.weight',
  'ffn_gate_exps.weight',
  'ffn_down_exps.weight',
  'ffn_up_exps.weight',
]

/** A model's header as read from disk, with metadata only where it matters: tensor data is never read here. */
function header(
  arch: string,
  nLayer: number,
  kvs: Record<string, number | number[] | boolean[]>,
  blockTensors: readonly string[] = LLAMA_BLOCK,
): GgufFile {
  const tensor = (name: string): GgufTensor => ({
    name,
    type: F32 as NonNullable<typeof F32>,
    shape: [1],
    offset: 0,
    bytes: 4,
  })
  const tensors = [
    'token_embd.weight',
    'output_norm.weight',
    ...Array.from({ length: nLayer }, (_, i) => blockTensors.map((t) => `blk.${i}.${t}`)).flat(),
  ]
  return {
    path: `${arch}.gguf`,
    fileBytes: 0,
    version: 3,
    alignment: 32,
    dataOffset: 0,
    tensors: tensors.map(tensor),
    kvs: [
      { key: 'general.architecture', type: GgufValueType.STRING, value: arch },
      { key: `${arch}.block_count`, type: GgufValueType.UINT32, value: nLayer },
      { key: `${arch}.embedding_length`, type: GgufValueType.UINT32, value: 64 },
      ...Object.entries(kvs).map(([key, value]) =>
        Array.isArray(value)
          ? {
              key: `${arch}.${key}`,
              type: GgufValueType.ARRAY,
              subType: typeof value[0] === 'boolean' ? GgufValueType.BOOL : GgufValueType.UINT32,
              value,
            }
          : { key: `${arch}.${key}`, type: GgufValueType.UINT32, value },
      ),
    ],
  }
}

const kinds = (file: GgufFile) => describeModel(file).cachePerBlock

describe('each block’s cache from GGUF metadata', () => {
  it('ordinary attention (llama, qwen2, qwen3, qwen3moe, mixtral) caches K and V of its KV heads, f16', () => {
    // 4 KV heads × (16 + 16) × 2 bytes
    const llama = header('llama', 3, {
      'attention.head_count': 8,
      'attention.head_count_kv': 4,
      'attention.key_length': 16,
      'attention.value_length': 16,
    })
    expect(kinds(llama)).toEqual(Array(3).fill({ kind: 'kv', bytesPerToken: 256 }))
    // Qwen3-30B-A3B: 4 KV heads of 128: 2 KiB per token per block
    const qwen3moe = header(
      'qwen3moe',
      2,
      {
        'attention.head_count': 32,
        'attention.head_count_kv': 4,
        'attention.key_length': 128,
        'attention.value_length': 128,
        expert_count: 128,
      },
      MOE_BLOCK,
    )
    expect(kinds(qwen3moe)).toEqual(Array(2).fill({ kind: 'kv', bytesPerToken: 2048 }))
    // Mixtral is llama with experts; key length from embedding / heads (64 / 8)
    const mixtral = header(
      'llama',
      2,
      { 'attention.head_count': 8, 'attention.head_count_kv': 2, expert_count: 8 },
      MOE_BLOCK,
    )
    expect(kinds(mixtral)).toEqual(Array(2).fill({ kind: 'kv', bytesPerToken: 2 * 16 * 2 }))
    // KV heads per block, as some models state them
    const varied = header('qwen2', 2, { 'attention.head_count': 8, 'attention.head_count_kv': [8, 2] }, [
      ...LLAMA_BLOCK,
      'attn_q.bias',
      'attn_k.bias',
      'attn_v.bias',
    ])
    expect(kinds(varied).map((c) => c.bytesPerToken)).toEqual([8 * 16 * 2, 2 * 16 * 2])
    expect(describeModel(varied).kvBytesPerTokenPerBlock).toBe(8 * 16 * 2)
  })

  it('MLA (deepseek2) caches one latent of kv_lora_rank + rope dimension per token, keys only', () => {
    const deepseek = header(
      'deepseek2',
      4,
      {
        'attention.head_count': 128,
        'attention.head_count_kv': 1,
        'attention.key_length': 576,
        'attention.value_length': 512,
        'attention.key_length_mla': 192,
        'attention.value_length_mla': 128,
        'attention.kv_lora_rank': 512,
        'rope.dimension_count': 64,
        leading_dense_block_count: 1,
      },
      ['attn_norm.weight', 'attn_kv_a_mqa.weight'],
    )
    expect(kinds(deepseek)).toEqual(Array(4).fill({ kind: 'latent', bytesPerToken: 1152 }))
  })

  it(
    'glm-dsa: one indexer type stands for every block; without types a 1M-context model runs GLM-5.2’s table, ' +
      'which ends at block 77',
    () => {
      const glm = (kvs: Record<string, number | number[] | boolean[]>) =>
        describeModel(
          header(
            'glm-dsa',
            80,
            {
              'attention.head_count': 64,
              'attention.kv_lora_rank': 512,
              'rope.dimension_count': 64,
              'attention.indexer.key_length': 128,
              'attention.indexer.top_k': 2048,
              context_length: 1_048_576,
              ...kvs,
            },
            ['attn_norm.weight', 'attn_kv_a_mqa.weight'],
          ),
        )
      const [latent, full] = [(512 + 64) * 2, (512 + 64 + 128) * 2]
      // llama.cpp's get_key_or_arr fills every block with a single value: all full, no cut carries indices
      const single = glm({ 'attention.indexer.types': 1 })
      expect(single.cachePerBlock.map((c) => c.bytesPerToken)).toEqual(Array(80).fill(full))
      expect(single.seams.every((x) => x.int32PerToken === 0)).toBe(true)
      // converters may write the types as bools (true: a full block), as the native loader reads them
      const bools = glm({ 'attention.indexer.types': Array.from({ length: 80 }, (_, il) => il % 4 === 0) })
      expect(bools.cachePerBlock.flatMap((c, il) => (c.bytesPerToken === full ? [il] : []))).toEqual(
        Array.from({ length: 20 }, (_, i) => 4 * i),
      )
      expect(bools.seams[0]?.int32PerToken).toBe(2048)
      expect(bools.seams[3]?.int32PerToken).toBe(0)
      // GLM_5_2_DEFAULT_INDEXER_TYPES: blocks 0, 1 and every fourth
      // from 2 up to 74; its entries past 77 are zero (shared)
      const table = glm({})
      const fullBlocks = table.cachePerBlock.flatMap((c, il) => (c.bytesPerToken === full ? [il] : []))
      expect(fullBlocks).toEqual([0, 1, ...Array.from({ length: 19 }, (_, i) => 2 + 4 * i)])
      expect(table.cachePerBlock.slice(75).map((c) => c.bytesPerToken)).toEqual(Array(5).fill(latent))
      // the cut before shared block 78 carries block 74's top-k
      expect(table.seams[77]?.int32PerToken).toBe(2048)
    },
  )

  it(
    'gpt-oss keeps a sliding window on the even blocks ' + '(pattern 2), or on the blocks a per-block pattern names',
    () => {
      const kvs = {
        'attention.head_count': 64,
        'attention.head_count_kv': 8,
        'attention.key_length': 64,
        'attention.value_length': 64,
        'attention.sliding_window': 128,
      }
      const window = { kind: 'window', bytesPerToken: 2048, windowTokens: 128 }
      const full = { kind: 'kv', bytesPerToken: 2048 }
      expect(kinds(header('gpt-oss', 4, kvs, MOE_BLOCK))).toEqual([window, full, window, full])
      const flagged = header(
        'gpt-oss',
        3,
        { ...kvs, 'attention.sliding_window_pattern': [false, true, true] },
        MOE_BLOCK,
      )
      expect(kinds(flagged)).toEqual([full, window, window])
      expect(formatCache(kinds(header('gpt-oss', 24, kvs, MOE_BLOCK)))).toEqual([
        'blocks 0, 2, …, 22: 2.00 KiB/token (sliding window: at most 128 tokens per session)',
        'blocks 1, 3, …, 23: 2.00 KiB/token (KV)',
      ])
    },
  )

  it('inspect groups equal blocks into one line each', () => {
    expect(formatCache(Array(48).fill({ kind: 'kv', bytesPerToken: 2048 }))).toEqual([
      'blocks 0–47: 2.00 KiB/token (KV)',
    ])
    expect(formatCache([{ kind: 'latent', bytesPerToken: 1152 }])).toEqual([
      'block 0: 1.13 KiB/token (latent, keys only)',
    ])
  })
})
