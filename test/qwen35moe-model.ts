// Test helper: a tiny qwen35moe (Qwen3.5-MoE) GGUF with random weights that llama.cpp loads, written with our
// own GGUF writer until gguf/generate-archs.ts knows the family: delta-net blocks (a conv + SSM state each)
// and full-attention blocks every `fullAttentionInterval`, routed experts plus a sigmoid-gated shared expert.
import { writeFile } from 'node:fs/promises'
import { GGUFValueType } from '@huggingface/gguf'
import { GGML_TYPES } from '../gguf/ggml-types'
import { hashName, Sfc32 } from '../gguf/random'
import type { GgufKv } from '../gguf/reader'
import { serializeHeader } from '../gguf/writer'

export const QWEN35_SHAPE = {
  blocks: 4,
  embd: 128,
  heads: 4,
  kvHeads: 2,
  headDim: 32,
  rot: 16, // partial rotary, as Qwen3.5 rotates a quarter of each head
  sections: [3, 3, 2, 0], // M-RoPE sections: n_rot / 2 in all
  convKernel: 4,
  stateSize: 16, // per-head K and V size of the delta-net
  groups: 2, // key heads
  valueHeads: 4, // ssm.time_step_rank
  experts: 8,
  expertsUsed: 2,
  expertFf: 64,
  sharedFf: 64,
  vocab: 384,
  fullAttentionInterval: 2, // blocks 1 and 3 attend to everything; 0 and 2 are delta-net
  seed: 7,
}
export type Qwen35Shape = typeof QWEN35_SHAPE

/** Bytes of a delta-net block's recurrent state (f32): the last d_conv - 1 conv inputs and the SSM state. */
export function recurrentStateBytes(s: Qwen35Shape): number {
  const inner = s.stateSize * s.valueHeads
  const channels = inner + 2 * s.groups * s.stateSize
  return 4 * ((s.convKernel - 1) * channels + s.stateSize * inner)
}

const F32 = GGML_TYPES.get(0)
const F16 = GGML_TYPES.get(1)

function f16Bits(x: number): number {
  const f = new Float32Array([x])
  const u = new Uint32Array(f.buffer)[0] as number
  const sign = (u >>> 16) & 0x8000
  const exp = ((u >>> 23) & 0xff) - 127 + 15
  let mant = u & 0x7fffff
  if (exp <= 0) {
    if (exp < -10) return sign
    mant |= 0x800000
    const shift = 14 - exp
    let half = mant >>> shift
    const rest = mant & ((1 << shift) - 1)
    const mid = 1 << (shift - 1)
    if (rest > mid || (rest === mid && half & 1)) half++
    return sign | half
  }
  if (exp >= 31) return sign | 0x7c00
  let half = (exp << 10) | (mant >>> 13)
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++
  return sign | half
}

type Spec = { name: string; shape: number[]; f16: boolean; init: (rng: Sfc32) => number }

function tensors(s: Qwen35Shape): Spec[] {
  const E = s.embd
  const matrix = (name: string, shape: number[]) => {
    const scale = 1 / Math.sqrt(shape[0] as number)
    return { name, shape, f16: true, init: (r: Sfc32) => r.signed() * scale * 1.7 }
  }
  const norm = (name: string, n: number) => ({ name, shape: [n], f16: false, init: (r: Sfc32) => 1 + 0.2 * r.signed() })
  const out: Spec[] = [
    matrix('token_embd.weight', [E, s.vocab]),
    norm('output_norm.weight', E),
    matrix('output.weight', [E, s.vocab]),
  ]
  const keyDim = s.stateSize * s.groups
  const valueDim = s.stateSize * s.valueHeads
  const convDim = 2 * keyDim + valueDim
  for (let il = 0; il < s.blocks; il++) {
    const b = `blk.${il}.`
    out.push(norm(`${b}attn_norm.weight`, E), norm(`${b}post_attention_norm.weight`, E))
    if ((il + 1) % s.fullAttentionInterval !== 0) {
      out.push(
        matrix(`${b}attn_qkv.weight`, [E, convDim]),
        matrix(`${b}attn_gate.weight`, [E, valueDim]),
        { name: `${b}ssm_conv1d.weight`, shape: [s.convKernel, convDim], f16: false, init: (r) => 0.6 * r.signed() },
        { name: `${b}ssm_dt.bias`, shape: [s.valueHeads], f16: false, init: (r) => 0.5 * r.signed() },
        // -exp(A_log): a negative decay rate per value head
        { name: `${b}ssm_a`, shape: [s.valueHeads], f16: false, init: (r) => -Math.exp(r.signed()) },
        matrix(`${b}ssm_beta.weight`, [E, s.valueHeads]),
        matrix(`${b}ssm_alpha.weight`, [E, s.valueHeads]),
        norm(`${b}ssm_norm.weight`, s.stateSize),
        matrix(`${b}ssm_out.weight`, [valueDim, E]),
      )
    } else {
      const q = s.heads * s.headDim
      const kv = s.kvHeads * s.headDim
      out.push(
        matrix(`${b}attn_q.weight`, [E, 2 * q]),
        matrix(`${b}attn_k.weight`, [E, kv]),
        matrix(`${b}attn_v.weight`, [E, kv]),
        matrix(`${b}attn_output.weight`, [q, E]),
        norm(`${b}attn_q_norm.weight`, s.headDim),
        norm(`${b}attn_k_norm.weight`, s.headDim),
      )
    }
    out.push(
      { ...matrix(`${b}ffn_gate_inp.weight`, [E, s.experts]), f16: false },
      matrix(`${b}ffn_gate_exps.weight`, [E, s.expertFf, s.experts]),
      matrix(`${b}ffn_up_exps.weight`, [E, s.expertFf, s.experts]),
      matrix(`${b}ffn_down_exps.weight`, [s.expertFf, E, s.experts]),
      { ...matrix(`${b}ffn_gate_inp_shexp.weight`, [E]), f16: false },
      matrix(`${b}ffn_gate_shexp.weight`, [E, s.sharedFf]),
      matrix(`${b}ffn_up_shexp.weight`, [E, s.sharedFf]),
      matrix(`${b}ffn_down_shexp.weight`, [s.sharedFf, E]),
    )
  }
  return out
}

function metadata(s: Qwen35Shape, overrides: Record<string, number>): GgufKv[] {
  const a = 'qwen35moe.'
  const u32 = (key: string, value: number): GgufKv => ({
    key,
    type: GGUFValueType.UINT32,
    value: overrides[key] ?? value,
  })
  const f32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.FLOAT32, value })
  const str = (key: string, value: string): GgufKv => ({ key, type: GGUFValueType.STRING, value })
  const tokens = ['<unk>', '<s>', '</s>']
  const types = [2, 3, 3]
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
    types.push(6)
  }
  const letters = 'etaoinshrdlucmfwypvbgkjqxz'
  for (let i = 0; tokens.length < s.vocab; i++) {
    let word = ''
    for (let n = i; ; n = Math.floor(n / letters.length) - 1) {
      word = letters[n % letters.length] + word
      if (n < letters.length) break
    }
    tokens.push(`▁${word}`)
    types.push(1)
  }
  const scores = tokens.map((_, i) => (i < 259 ? 0 : -(i - 259)))
  return [
    str('general.architecture', 'qwen35moe'),
    str('general.name', `neuron-random-qwen35moe-${s.blocks}x${s.embd}-seed${s.seed}`),
    u32('general.file_type', 1),
    u32(`${a}context_length`, 4096),
    u32(`${a}embedding_length`, s.embd),
    u32(`${a}block_count`, s.blocks),
    u32(`${a}attention.head_count`, s.heads),
    u32(`${a}attention.head_count_kv`, s.kvHeads),
    u32(`${a}attention.key_length`, s.headDim),
    u32(`${a}attention.value_length`, s.headDim),
    f32(`${a}attention.layer_norm_rms_epsilon`, 1e-6),
    u32(`${a}rope.dimension_count`, s.rot),
    { key: `${a}rope.dimension_sections`, type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value: s.sections },
    f32(`${a}rope.freq_base`, 1e6),
    u32(`${a}expert_count`, s.experts),
    u32(`${a}expert_used_count`, s.expertsUsed),
    u32(`${a}expert_feed_forward_length`, s.expertFf),
    u32(`${a}expert_shared_feed_forward_length`, s.sharedFf),
    u32(`${a}ssm.conv_kernel`, s.convKernel),
    u32(`${a}ssm.state_size`, s.stateSize),
    u32(`${a}ssm.group_count`, s.groups),
    u32(`${a}ssm.time_step_rank`, s.valueHeads),
    u32(`${a}ssm.inner_size`, s.stateSize * s.valueHeads),
    u32(`${a}full_attention_interval`, s.fullAttentionInterval),
    str('tokenizer.ggml.model', 'llama'),
    { key: 'tokenizer.ggml.tokens', type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING, value: tokens },
    { key: 'tokenizer.ggml.scores', type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32, value: scores },
    { key: 'tokenizer.ggml.token_type', type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value: types },
    u32('tokenizer.ggml.unknown_token_id', 0),
    u32('tokenizer.ggml.bos_token_id', 1),
    u32('tokenizer.ggml.eos_token_id', 2),
    { key: 'tokenizer.ggml.add_bos_token', type: GGUFValueType.BOOL, value: true },
    { key: 'tokenizer.ggml.add_eos_token', type: GGUFValueType.BOOL, value: false },
  ]
}

/**
 * Writes the model to `out`. `overrides` replaces u32 metadata values by key (e.g. a hostile
 * `qwen35moe.full_attention_interval` of 0) while the tensors keep the shape's sizes.
 */
export async function writeQwen35Moe(
  out: string,
  shape: Qwen35Shape = QWEN35_SHAPE,
  overrides: Record<string, number> = {},
): Promise<void> {
  if (!F32 || !F16) throw new Error('ggml type table lacks f32 / f16')
  const specs = tensors(shape)
  const layouts = specs.map((t) => {
    const n = t.shape.reduce((p, d) => p * d, 1)
    return { name: t.name, type: t.f16 ? F16 : F32, shape: t.shape, bytes: n * (t.f16 ? 2 : 4) }
  })
  const header = serializeHeader(metadata(shape, overrides), layouts, 32)
  const file = Buffer.alloc(header.fileBytes)
  header.bytes.copy(file, 0)
  for (const [i, t] of specs.entries()) {
    const at = header.bytes.length + (header.dataOffsets[i] ?? 0)
    const rng = new Sfc32(shape.seed, hashName(t.name))
    const n = t.shape.reduce((p, d) => p * d, 1)
    for (let j = 0; j < n; j++) {
      const x = t.init(rng)
      if (t.f16) file.writeUInt16LE(f16Bits(x), at + 2 * j)
      else file.writeFloatLE(x, at + 4 * j)
    }
  }
  await writeFile(out, file)
}
