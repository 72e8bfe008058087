import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { quantizeRows } from '../native/quantize'
import { greedyInChild } from '../test/greedy'
import { scratchDir } from '../test/models'
import { type GeneratedArch, type GeneratedType, type GenerateOptions, generateModel } from './generate'
import { ggufArch } from './generate-archs'
import { kvValue, readGguf } from './reader'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

// 256 wide so K-quant blocks fit; 8 experts (the default) of 256 each
const SHAPE = { blocks: 5, embd: 256, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 1, quantize: quantizeRows }
const MOE_ARCHS: GeneratedArch[] = ['qwen3moe', 'mixtral', 'deepseek2', 'gpt-oss', 'qwen35moe', 'glm-dsa', 'deepseek4']

async function generate(
  arch: GeneratedArch,
  type: GeneratedType,
  extra: Partial<GenerateOptions> = {},
): Promise<string> {
  const out = join(dir, `${arch}-${type}-${Object.values(extra).join('-')}.gguf`)
  await generateModel({ ...SHAPE, arch, type, out, ...extra })
  return out
}

describe('gen-model expert and MLA architectures load in node-llama-cpp 3.21.1 and continue a prompt', () => {
  for (const arch of MOE_ARCHS) {
    it(`${arch}: f16, q8_0, q4_0 and q4_K_M give 16 greedy tokens, at least 4 of them distinct`, async () => {
      const paths = []
      for (const type of ['f16', 'q8_0', 'q4_0', 'q4_K_M'] as const) paths.push(await generate(arch, type))
      const runs = await greedyInChild(paths, 16)
      expect(runs.map((r) => r.architecture)).toEqual(paths.map(() => ggufArch(arch)))
      for (const run of runs) {
        expect(run.tokens, run.modelPath).toHaveLength(16)
        expect(new Set(run.tokens).size, `${run.modelPath}: ${run.tokens.join(' ')}`).toBeGreaterThanOrEqual(4)
      }
    })
  }

  it(
    'qwen35moe, glm-dsa and deepseek4 give the same 16 tokens in f32 and f16: no router or greedy choice is a ' +
      'near-tie',
    async () => {
      const archs = ['qwen35moe', 'glm-dsa', 'deepseek4'] as const
      const paths = []
      for (const arch of archs) paths.push(await generate(arch, 'f32'), await generate(arch, 'f16'))
      const runs = await greedyInChild(paths, 16)
      for (let i = 0; i < archs.length; i++) expect(runs[2 * i + 1]?.tokens, archs[i]).toEqual(runs[2 * i]?.tokens)
    },
  )

  it('the q5_K and q6_K mixes load too (qwen3moe, deepseek2)', async () => {
    const runs = await greedyInChild([await generate('qwen3moe', 'q5_K'), await generate('deepseek2', 'q6_K')], 16)
    expect(runs.map((r) => r.tokens.length)).toEqual([16, 16])
  })
})

/** Each tensor's type by name, read back from the file. */
async function tensorTypes(path: string): Promise<Map<string, string>> {
  const file = await readGguf(path)
  return new Map(file.tensors.map((t) => [t.name, t.type.name]))
}

describe('K-quant mixes: each tensor gets the type llama-quantize (llama_tensor_get_type) gives it', () => {
  it(
    'deepseek2 q4_K_M, 8 experts: q6_K ffn_down on blocks 2 and 4, q5_K attn_output, q5_0 where rows are not ' +
      '256 wide',
    async () => {
      const path = await generate('deepseek2', 'q4_K_M')
      const types = await tensorTypes(path)
      expect(kvValue(await readGguf(path), 'general.file_type')).toBe(15)
      expect(types.get('token_embd.weight')).toBe('Q4_K')
      expect(types.get('output.weight')).toBe('Q6_K')
      expect(types.get('output_norm.weight')).toBe('F32')
      // block 0 is the dense leading block: use_more_bits(0, 5) is false
      expect(['ffn_gate', 'ffn_down', 'ffn_up'].map((t) => types.get(`blk.0.${t}.weight`))).toEqual([
        'Q4_K',
        'Q4_K',
        'Q4_K',
      ])
      for (let i = 0; i < 5; i++) {
        const b = (name: string) => types.get(`blk.${i}.${name}`)
        expect(b('attn_q_a.weight')).toBe('Q4_K')
        expect(b('attn_kv_a_mqa.weight')).toBe('Q4_K')
        // rows of q_lora 128, nope 64 and kv_lora 64: Q4_K falls back to Q5_0
        expect([b('attn_q_b.weight'), b('attn_k_b.weight'), b('attn_v_b.weight')]).toEqual(['Q5_0', 'Q5_0', 'Q5_0'])
        expect(b('attn_output.weight')).toBe('Q5_K') // 8 experts
        expect([b('attn_norm.weight'), b('attn_q_a_norm.weight'), b('attn_kv_a_norm.weight')]).toEqual([
          'F32',
          'F32',
          'F32',
        ])
        if (i === 0) continue
        const down = i === 2 || i === 4 ? 'Q6_K' : 'Q4_K'
        expect([b('ffn_down_exps.weight'), b('ffn_down_shexp.weight')]).toEqual([down, down])
        expect([
          b('ffn_gate_exps.weight'),
          b('ffn_up_exps.weight'),
          b('ffn_gate_shexp.weight'),
          b('ffn_up_shexp.weight'),
        ]).toEqual(['Q4_K', 'Q4_K', 'Q4_K', 'Q4_K'])
        expect([b('ffn_gate_inp.weight'), b('exp_probs_b.bias')]).toEqual(['F32', 'F32'])
      }
    },
  )

  it(
    'gpt-oss q4_K_M, 4 experts: q6_K attn_v and ffn_down_exps ' + 'on blocks 2 and 4; router, biases and sinks f32',
    async () => {
      const types = await tensorTypes(await generate('gpt-oss', 'q4_K_M', { experts: 4 }))
      for (let i = 0; i < 5; i++) {
        const b = (name: string) => types.get(`blk.${i}.${name}`)
        const more = i === 2 || i === 4 ? 'Q6_K' : 'Q4_K'
        expect([b('attn_v.weight'), b('ffn_down_exps.weight')]).toEqual([more, more])
        expect([b('attn_q.weight'), b('attn_k.weight'), b('attn_output.weight')]).toEqual(['Q4_K', 'Q4_K', 'Q4_K'])
        expect([b('ffn_gate_exps.weight'), b('ffn_up_exps.weight')]).toEqual(['Q4_K', 'Q4_K'])
        const f32 = [
          'ffn_gate_inp.weight',
          'ffn_gate_inp.bias',
          'attn_sinks.weight',
          'attn_q.bias',
          'ffn_gate_exps.bias',
          'ffn_down_exps.bias',
          'post_attention_norm.weight',
        ]
        expect(f32.map(b)).toEqual(f32.map(() => 'F32'))
      }
    },
  )

  it('mixtral q4_K and q6_K: the 8-expert model keeps attn_k and attn_v in q8_0; the head is q6_K', async () => {
    const s = await tensorTypes(await generate('mixtral', 'q4_K'))
    expect([s.get('blk.0.attn_v.weight'), s.get('blk.0.attn_k.weight'), s.get('blk.0.attn_output.weight')]).toEqual([
      'Q8_0',
      'Q8_0',
      'Q5_K',
    ])
    expect([s.get('blk.0.ffn_down_exps.weight'), s.get('blk.1.ffn_down_exps.weight'), s.get('output.weight')]).toEqual([
      'Q4_K',
      'Q4_K',
      'Q6_K',
    ])
    const six = await tensorTypes(await generate('mixtral', 'q6_K', { seed: 4 }))
    expect([
      six.get('blk.3.attn_q.weight'),
      six.get('blk.3.attn_v.weight'),
      six.get('blk.3.ffn_down_exps.weight'),
    ]).toEqual(['Q6_K', 'Q8_0', 'Q6_K'])
  })

  it('refuses a K-quant type without ggml’s quantizer, and impossible expert groups, in one line each', async () => {
    const out = join(dir, 'never.gguf')
    await expect(
      generateModel({ ...SHAPE, quantize: undefined, arch: 'qwen3moe', type: 'q4_K_M', out }),
    ).rejects.toThrow(/needs ggml's quantizer/)
    await expect(generateModel({ ...SHAPE, arch: 'deepseek2', type: 'f16', expertGroups: 3, out })).rejects.toThrow(
      /split into --expert-groups \(3\)/,
    )
    await expect(generateModel({ ...SHAPE, arch: 'deepseek2', type: 'f16', blocks: 27, out })).rejects.toThrow(
      /DeepSeek-V2-Lite/,
    )
    await expect(generateModel({ ...SHAPE, arch: 'qwen3moe', type: 'f16', qLoraRank: 64, out })).rejects.toThrow(
      /--q-lora-rank does not apply to qwen3moe/,
    )
    await expect(
      generateModel({ ...SHAPE, arch: 'qwen35moe', type: 'f16', fullAttentionInterval: 6, out }),
    ).rejects.toThrow(/--full-attention-interval must be 1 to --blocks \(5\)/)
    await expect(generateModel({ ...SHAPE, arch: 'glm-dsa', type: 'f16', indexerHeadSize: 96, out })).rejects.toThrow(
      /power of two of at least 64/,
    )
    await expect(generateModel({ ...SHAPE, arch: 'qwen3moe', type: 'f16', fusedGateUp: true, out })).rejects.toThrow(
      /fused ffn_gate_up_exps loads in deepseek2 and qwen35moe only/,
    )
    await expect(
      generateModel({ ...SHAPE, arch: 'deepseek4', type: 'f16', compressRatios: [0, 4, 4, 0, 4], out }),
    ).rejects.toThrow(/needs at least one 4 and one 128 block/)
  })
})

describe('qwen35moe, glm-dsa and deepseek4 hold the tensors and keys llama.cpp reads', () => {
  it(
    'qwen35moe: gated delta-net on blocks 0-2 and 4, full attention on block 3; q4_K_M keeps the conv kernels ' +
      'f32, fused qkv q8_0',
    async () => {
      const file = await readGguf(await generate('qwen35moe', 'q4_K_M'))
      const types = new Map(file.tensors.map((t) => [t.name, t.type.name]))
      expect([types.get('blk.3.attn_q.weight'), types.has('blk.3.ssm_a'), types.has('blk.2.attn_q.weight')]).toEqual([
        'Q4_K',
        false,
        false,
      ])
      for (const i of [0, 1, 2, 4]) {
        expect([
          types.get(`blk.${i}.ssm_conv1d.weight`),
          types.get(`blk.${i}.ssm_a`),
          types.get(`blk.${i}.attn_qkv.weight`),
        ]).toEqual(['F32', 'F32', 'Q8_0'])
      }
      expect(types.get('blk.0.ffn_gate_inp_shexp.weight')).toBe('F32')
      expect(kvValue(file, 'qwen35moe.rope.dimension_sections')).toEqual([3, 3, 2, 0])
    },
  )

  it(
    'glm-dsa: shared indexer blocks (1, 3) have no indexer of their own; llama.cpp reuses the top-k of the full ' +
      'block before',
    async () => {
      const file = await readGguf(await generate('glm-dsa', 'f16'))
      expect(kvValue(file, 'glm-dsa.attention.indexer.types')).toEqual([1, 0, 1, 0, 1])
      const names = new Set(file.tensors.map((t) => t.name))
      expect([0, 1, 2, 3, 4].map((i) => names.has(`blk.${i}.indexer.attn_q_b.weight`))).toEqual([
        true,
        false,
        true,
        false,
        true,
      ])
    },
  )

  it(
    'deepseek4: block 0 routes by a token-id table, ratio-4 blocks carry a compressor and an indexer, ratio-128 ' +
      'blocks a compressor',
    async () => {
      const path = await generate('deepseek4', 'q8_0')
      const file = await readGguf(path)
      const tensor = (name: string) => file.tensors.find((t) => t.name === name)
      expect(kvValue(file, 'deepseek4.attention.compress_ratios')).toEqual([0, 4, 128, 4, 128])
      expect([
        tensor('blk.0.attn_compressor_kv.weight'),
        tensor('blk.0.exp_probs_b.bias'),
        tensor('blk.1.ffn_gate_tid2eid.weight'),
      ]).toEqual([undefined, undefined, undefined])
      expect(tensor('blk.1.indexer_compressor_ape.weight')?.shape).toEqual([128, 4])
      expect([tensor('blk.2.attn_compressor_ape.weight')?.shape, tensor('blk.2.indexer.proj.weight')]).toEqual([
        [64, 128],
        undefined,
      ])
      expect([tensor('output_hc_fn.weight')?.type.name, tensor('blk.0.hc_attn_scale.weight')?.type.name]).toEqual([
        'Q8_0',
        'F32',
      ])
      const table = tensor('blk.0.ffn_gate_tid2eid.weight')
      expect([table?.type.name, table?.shape]).toEqual(['I32', [2, 384]])
      const bytes = Buffer.alloc(table?.bytes ?? 0)
      const fh = await open(path)
      await fh.read(bytes, 0, bytes.length, table?.offset ?? 0)
      await fh.close()
      const ids = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)
      for (let token = 0; token < 384; token++) {
        const [a, b] = [ids[2 * token] ?? -1, ids[2 * token + 1] ?? -1]
        expect(a !== b && a >= 0 && a < 8 && b >= 0 && b < 8, `token ${token}: experts ${a}, ${b}`).toBe(true)
      }
    },
  )
})
