import { describe, expect, it } from 'vitest'
import { NeuronError } from '../protocol'
import { DEEPSEEK_V3, QWEN3_30B_A3B } from '../test/model-configs'
import { estimateFromConfig } from './config-manifest'

// Q4_K stores 256 weights in 144 bytes (4.5 bits), Q6_K in 210 (6.5625 bits), Q5_0 32 in 22; f32 is 4 bytes.
const q4 = (n: number) => (n / 256) * 144
const q6 = (n: number) => (n / 256) * 210
const q5_0 = (n: number) => (n / 32) * 22
const f32 = (n: number) => 4 * n
/** llama.cpp's use_more_bits: the first and last eighth of the blocks, and every third between, get Q6_K at Q4_K_M. */
const moreBits = (layer: number, n: number) =>
  layer < Math.floor(n / 8) || layer >= Math.floor((7 * n) / 8) || (layer - Math.floor(n / 8)) % 3 === 2

describe('a model sized from its config.json at Q4_K_M', () => {
  it(
    'Qwen3-30B-A3B: two block sizes (attn_v and the experts’ down projection get Q6_K on half the blocks), 2 KiB ' +
      'of KV per token per block',
    () => {
      const {
        hidden_size: E,
        num_attention_heads: H,
        num_key_value_heads: KV,
        head_dim: hd,
        num_experts: X,
        moe_intermediate_size: F,
      } = QWEN3_30B_A3B
      const rest =
        q4(E * H * hd) + q4(E * KV * hd) + q4(H * hd * E) + 2 * q4(E * F * X) + f32(E * X) + f32(2 * E + 2 * hd)
      const small = rest + q4(E * KV * hd) + q4(F * E * X)
      const big = rest + q6(E * KV * hd) + q6(F * E * X)
      expect([small, big]).toEqual([351_421_440, 403_596_288])
      // use_more_bits: the first and last 6 of 48 blocks, and every third between (8, 11, …, 41)
      const bigBlocks = [0, 1, 2, 3, 4, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 42, 43, 44, 45, 46, 47]
      expect(Array.from({ length: 48 }, (_, i) => i).filter((i) => moreBits(i, 48))).toEqual(bigBlocks)

      const model = estimateFromConfig(QWEN3_30B_A3B, 'Qwen3-30B-A3B')
      expect(model).toMatchObject({
        architecture: 'qwen3moe',
        nLayer: 48,
        nEmbd: 2048,
        nVocab: 151936,
        contextLength: 40960,
      })
      expect(model.bytesPerBlock).toEqual(Array.from({ length: 48 }, (_, i) => (bigBlocks.includes(i) ? big : small)))
      expect(model.embedBytes).toBe(q4(E * 151936))
      expect(model.headBytes).toBe(f32(E) + q6(E * 151936))
      // 18.55 GB in all, as the published Q4_K_M file (18.6 GB)
      expect(model.bytesPerBlock.reduce((s, b) => s + b, 0) + model.embedBytes + model.headBytes).toBe(18_550_716_416)
      expect(model.cachePerBlock).toEqual(Array(48).fill({ kind: 'kv', bytesPerToken: KV * (hd + hd) * 2 }))
    },
  )

  it(
    'DeepSeek-V3: 3 dense blocks, then 58 of 256 experts plus ' + 'a shared one; every block caches a 1152-byte latent',
    () => {
      const {
        hidden_size: E,
        num_attention_heads: H,
        q_lora_rank: qLora,
        kv_lora_rank: kvLora,
        qk_nope_head_dim: nope,
        qk_rope_head_dim: rope,
      } = DEEPSEEK_V3
      const { v_head_dim: vHead, intermediate_size: FF, moe_intermediate_size: F, n_routed_experts: X } = DEEPSEEK_V3
      // attn_k_b's rows (128) do not fill a Q4_K block: llama-quantize falls back to Q5_0
      const attention =
        f32(2 * E + qLora + kvLora) +
        q4(E * qLora) +
        q4(qLora * H * (nope + rope)) +
        q4(E * (kvLora + rope)) +
        q5_0(nope * kvLora * H) +
        q4(kvLora * vHead * H) +
        q4(H * vHead * E)
      const dense = (i: number) => attention + 2 * q4(E * FF) + (moreBits(i, 61) ? q6 : q4)(FF * E)
      const moe = (i: number) => {
        const down = moreBits(i, 61) ? q6 : q4
        return attention + f32(E * X) + f32(X) + 2 * q4(E * F * X) + down(F * E * X) + 2 * q4(E * F) + down(F * E)
      }
      const model = estimateFromConfig(DEEPSEEK_V3, 'DeepSeek-V3')
      expect(model.architecture).toBe('deepseek2')
      expect(model.bytesPerBlock).toEqual(Array.from({ length: 61 }, (_, i) => (i < 3 ? dense(i) : moe(i))))
      // about 404 GB in all, as the published Q4_K_M files
      expect(
        Math.round((model.bytesPerBlock.reduce((s, b) => s + b, 0) + model.embedBytes + model.headBytes) / 1e9),
      ).toBe(404)
      expect(model.cachePerBlock).toEqual(Array(61).fill({ kind: 'latent', bytesPerToken: (kvLora + rope) * 2 }))
      expect(model.cachePerBlock[0]?.bytesPerToken).toBe(1152)
    },
  )

  it('refuses a config it cannot size, naming what is missing or unsupported', () => {
    expect(() => estimateFromConfig({ ...QWEN3_30B_A3B, model_type: 'mamba' })).toThrow(
      /model_type mamba is not one Neuron sizes.*qwen3_moe/,
    )
    expect(() => estimateFromConfig({ model_type: 'llama' })).toThrow(NeuronError)
  })
})
