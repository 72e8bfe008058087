import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { quantizeRows } from '../native/quantize'
import { allowedCuts, seamBytesPerToken } from '../protocol'
import { DEEPSEEK_V4_FLASH, GLM_5_2, ORNITH_1_0_397B } from '../test/model-configs'
import { scratchDir } from '../test/models'
import { estimateFromConfig } from './config-manifest'
import { generateModel } from './generate'
import { describeModel } from './model'
import { readGguf } from './reader'

// Q4_K stores 256 weights in 144 bytes, Q6_K in 210, Q5_0 32 in 22; f32 is 4 bytes.
const q4 = (n: number) => (n / 256) * 144
const q6 = (n: number) => (n / 256) * 210
const q5_0 = (n: number) => (n / 32) * 22
const f32 = (n: number) => 4 * n
/** llama.cpp's use_more_bits: the first and last eighth of the blocks, and every third between, get Q6_K at Q4_K_M. */
const moreBits = (layer: number, n: number) =>
  layer < Math.floor(n / 8) || layer >= Math.floor((7 * n) / 8) || (layer - Math.floor(n / 8)) % 3 === 2
const total = (m: { bytesPerBlock: readonly number[]; embedBytes: number; headBytes: number }) =>
  m.bytesPerBlock.reduce((s, b) => s + b, 0) + m.embedBytes + m.headBytes

describe('the large targets sized from their configs at Q4_K_M, with their caches and seams', () => {
  it(
    'DeepSeek-V4-Flash: 43 MoE blocks of 3.7–4.3 GB, hyper-connections 4 × 4096 wide across every cut, token ids ' +
      'before the hash-routed blocks',
    () => {
      const c = DEEPSEEK_V4_FLASH
      const {
        hidden_size: E,
        num_attention_heads: H,
        head_dim: hd,
        q_lora_rank: qLora,
        o_lora_rank: oLora,
        o_groups: oG,
        hc_mult: hc,
      } = c
      const { moe_intermediate_size: F, n_routed_experts: X, index_n_heads: ih, index_head_dim: ihd, vocab_size: V } = c
      const mix = (2 + hc) * hc
      const block = (il: number) => {
        const r = c.compress_ratios[il] ?? 0
        const coff = r === 4 ? 2 : 1
        const down = moreBits(il, 43) ? q6 : q4
        const norms = f32(E + H + qLora + hd + 2 * mix + 2 * 3 + E + E * X) + (il < 3 ? f32(6 * V) : f32(X))
        const attention = q4(E * qLora + qLora * H * hd + E * hd + H * hd * oLora + oG * oLora * E + 2 * hc * E * mix)
        const compressor = r === 0 ? 0 : q4(2 * E * coff * hd + coff * hd * r) + f32(hd)
        const indexer = r === 4 ? q4(E * ih + qLora * ih * ihd + 2 * E * 2 * ihd + 2 * ihd * r) + f32(ihd) : 0
        return norms + attention + compressor + indexer + q4(2 * E * F * X + 2 * E * F) + down(F * E * X + F * E)
      }
      const model = estimateFromConfig(c, 'DeepSeek-V4-Flash')
      expect(model).toMatchObject({ architecture: 'deepseek4', nLayer: 43, nEmbd: 4096 })
      expect(model.bytesPerBlock).toEqual(Array.from({ length: 43 }, (_, il) => block(il)))
      expect(model.embedBytes).toBe(q4(E * V))
      expect(model.headBytes).toBe(f32(E) + q6(E * V) + q4(hc * E * hc) + f32(hc + 1))
      // 284B weights at about 4.6 bits: within the 153–172 GB quoted for 4-bit files
      expect(total(model) / 1e9).toBeGreaterThan(153)
      expect(total(model) / 1e9).toBeLessThan(172)
      // Keys of 512 values (1 KiB) for the last 128 tokens everywhere; ratio-4 blocks add a compressed key and an
      // indexer key (256 B) per 4 tokens and 81 920 B of compressor
      // state; ratio-128 blocks a key per 128 tokens and 512 KiB.
      expect(model.cachePerBlock[0]).toEqual({ kind: 'window', bytesPerToken: 1024, windowTokens: 128 })
      const recent = { bytesPerToken: 1024, windowTokens: 128 }
      expect(model.cachePerBlock[2]).toEqual({
        kind: 'latent',
        bytesPerToken: (1024 + 256) / 4,
        recent,
        fixedBytes: 2 * 8 * 1024 * 4 + 2 * 8 * 256 * 4,
      })
      expect(model.cachePerBlock[3]).toEqual({
        kind: 'latent',
        bytesPerToken: 1024 / 128,
        recent,
        fixedBytes: 2 * 128 * 512 * 4,
      })
      // 4 streams of 4096 f16 values; blocks 1 and 2 route experts by token id, so cuts 1 and 2 carry the ids too.
      expect(allowedCuts(model).every((x) => x === 1)).toBe(true)
      expect([1, 2, 3, 42].map((b) => seamBytesPerToken(model, b))).toEqual([32768 + 4, 32768 + 4, 32768, 32768])
    },
  )

  it(
    'GLM-5.2: 3 dense then 75 MoE blocks of 5.5–6.4 GB; a cut before a shared-indexer block carries 2048 top-k ' +
      'indices',
    () => {
      const c = GLM_5_2
      const {
        hidden_size: E,
        num_attention_heads: H,
        q_lora_rank: qLora,
        kv_lora_rank: kvLora,
        qk_nope_head_dim: nope,
        qk_rope_head_dim: rope,
      } = c
      const {
        v_head_dim: vHead,
        intermediate_size: FF,
        moe_intermediate_size: F,
        n_routed_experts: X,
        index_n_heads: ih,
        index_head_dim: ihd,
      } = c
      const full = (il: number) => il < 2 || (il - 2) % 4 === 0
      // attn_k_b's rows (192) do not fill a Q4_K block: llama-quantize falls back to Q5_0
      const attention =
        f32(2 * E + qLora + kvLora) +
        q4(E * qLora + qLora * H * (nope + rope) + E * (kvLora + rope) + kvLora * vHead * H + H * vHead * E) +
        q5_0(nope * kvLora * H)
      const indexer = (il: number) => (full(il) ? f32(2 * ihd) + q4(E * ih + E * ihd + qLora * ih * ihd) : 0)
      const block = (il: number) => {
        const down = moreBits(il, 78) ? q6 : q4
        const ffn =
          il < 3
            ? q4(2 * E * FF) + down(FF * E)
            : f32(E * X + X) + q4(2 * E * F * X + 2 * E * F) + down(F * E * X + F * E)
        return attention + indexer(il) + ffn
      }
      const model = estimateFromConfig(c, 'GLM-5.2')
      expect(model).toMatchObject({ architecture: 'glm-dsa', nLayer: 78, nEmbd: 6144 })
      expect(model.bytesPerBlock).toEqual(Array.from({ length: 78 }, (_, il) => block(il)))
      // The latent (512 + 64 values) on every block, and the indexer's 128-value key on the 21 full blocks.
      expect(model.cachePerBlock.map((x) => x.bytesPerToken)).toEqual(
        Array.from({ length: 78 }, (_, il) => (512 + 64 + (full(il) ? 128 : 0)) * 2),
      )
      expect(model.cachePerBlock.filter((x) => x.bytesPerToken === 1408)).toHaveLength(21)
      // 6144 f16 values everywhere, plus 2048 int32 indices before each shared block (3, 4, 5, then 7, 8, 9, …).
      expect([2, 3, 6, 7, 77].map((b) => seamBytesPerToken(model, b))).toEqual([
        12288,
        12288 + 8192,
        12288,
        12288 + 8192,
        12288 + 8192,
      ])
    },
  )

  it(
    'Ornith-1.0-397B (Qwen3.5-MoE): 60 blocks, 45 of them linear attention with 4.1 MiB of fixed state per ' +
      'session, K and V on every fourth',
    () => {
      const c = ORNITH_1_0_397B
      const {
        hidden_size: E,
        num_attention_heads: H,
        num_key_value_heads: Hkv,
        head_dim: hd,
        num_experts: X,
        moe_intermediate_size: F,
      } = c
      const {
        shared_expert_intermediate_size: Fs,
        linear_key_head_dim: dk,
        linear_value_head_dim: dv,
        linear_num_key_heads: nK,
      } = c
      const { linear_num_value_heads: nV, linear_conv_kernel_dim: kernel, vocab_size: V } = c
      const convDim = 2 * dk * nK + dv * nV
      const block = (il: number) => {
        const more = moreBits(il, 60) ? q6 : q4
        const linear = (il + 1) % 4 !== 0
        const attention = linear
          ? more(E * convDim) + q4(E * dv * nV + dv * nV * E + 2 * E * nV) + f32(kernel * convDim + 2 * nV + dv)
          : q4(E * H * hd * 2 + E * Hkv * hd + H * hd * E) + more(E * Hkv * hd) + f32(2 * hd)
        return f32(2 * E + E * X + E) + attention + q4(2 * E * F * X + 2 * E * Fs) + more(F * E * X + Fs * E)
      }
      const model = estimateFromConfig(c, 'Ornith-1.0-397B')
      expect(model).toMatchObject({ architecture: 'qwen35moe', nLayer: 60, nEmbd: 4096 })
      expect(model.bytesPerBlock).toEqual(Array.from({ length: 60 }, (_, il) => block(il)))
      expect(model.embedBytes + model.headBytes).toBe(q4(E * V) + f32(E) + q6(E * V))
      // conv window (4 − 1) × 12 288 values plus 64 heads of 128 × 128, f32: 4 341 760 bytes per session
      const state = 4 * ((kernel - 1) * convDim + dk * dv * nV)
      expect(state).toBe(4_341_760)
      expect(model.cachePerBlock).toEqual(
        Array.from({ length: 60 }, (_, il) =>
          (il + 1) % 4 === 0
            ? { kind: 'kv', bytesPerToken: 2 * 512 * 2 }
            : { kind: 'kv', bytesPerToken: 0, fixedBytes: state },
        ),
      )
      expect(seamBytesPerToken(model, 30)).toBe(8192)
    },
  )
})

describe('a config estimate names and sizes tensors as a real file of the same shape has them', () => {
  it(
    'deepseek4: a generated Q4_K_M file (llama.cpp loads it) has the estimate’s tensors in each block, its embed ' +
      'and its head bytes',
    async () => {
      // gen-model's deepseek4 defaults for this shape: 8 experts (2
      // used) of 256, q LoRA 128, rope 32, output 2 groups of rank 64
      const shape = {
        blocks: 5,
        embd: 256,
        heads: 4,
        kvHeads: 1,
        ff: 256,
        vocab: 384,
        seed: 1,
        compressRatios: [0, 4, 128, 4, 128],
      }
      const config = {
        ...DEEPSEEK_V4_FLASH,
        hidden_size: 256,
        num_hidden_layers: 5,
        num_attention_heads: 4,
        head_dim: 64,
        qk_rope_head_dim: 32,
        q_lora_rank: 128,
        o_lora_rank: 64,
        o_groups: 2,
        intermediate_size: 256,
        moe_intermediate_size: 256,
        n_routed_experts: 8,
        num_experts_per_tok: 2,
        num_hash_layers: 1,
        compress_ratios: shape.compressRatios,
        index_n_heads: 4,
        index_head_dim: 64,
        index_topk: 8,
        vocab_size: 384,
        max_position_embeddings: 4096,
      }
      const { dir, cleanup } = await scratchDir()
      try {
        const out = join(dir, 'deepseek4.gguf')
        await generateModel({ ...shape, arch: 'deepseek4', type: 'q4_K_M', out, quantize: quantizeRows })
        const file = describeModel(await readGguf(out))
        const estimate = estimateFromConfig(config, 'tiny DeepSeek-V4')
        const named = (ts: readonly { name: string; shape: readonly number[] }[]) =>
          ts.map((t) => `${t.name} ${t.shape.join('×')}`).sort()
        expect(estimate.blocks.map(named)).toEqual(file.blocks.map(named))
        // the hyper-connection head (output_hc_*) is the head's, not a tensor every block artifact carries
        expect(file.shared).toEqual([])
        expect(estimate.bytesPerBlock).toEqual(file.bytesPerBlock)
        const bytes = (ts: readonly { bytes: number }[]) => ts.reduce((s, t) => s + t.bytes, 0)
        expect([estimate.embedBytes, estimate.headBytes]).toEqual([bytes(file.embed), bytes(file.head)])
      } finally {
        await cleanup()
      }
    },
  )
})
