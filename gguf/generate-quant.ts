// Tensor types for generated models: which ggml type each tensor gets (llama-quantize's choice for
// the K-quant mixes), and the bytes of random tensors in those types.
import { f32ToF16 } from '../protocol'
import { alignUp, type GgmlType, GgmlTypeId, ggmlType } from './ggml-types'
import type { Sfc32 } from './random'

export const GENERATED_TYPES = ['f32', 'f16', 'q8_0', 'q4_0', 'q4_K', 'q5_K', 'q6_K', 'q4_K_M'] as const
export type GeneratedType = (typeof GENERATED_TYPES)[number]

/** llama_ftype (include/llama.h): q4_K, q5_K and q6_K are llama-quantize's Q4_K_S, Q5_K_S and Q6_K mixes. */
export const FILE_TYPE: Record<GeneratedType, number> = {
  f32: 0,
  f16: 1,
  q4_0: 2,
  q8_0: 7,
  q4_K: 14,
  q4_K_M: 15,
  q5_K: 16,
  q6_K: 18,
}

/** ggml's row quantizer (the native addon's `quantize`): rows of `nPerRow` f32 values in, blocks out. */
export type RowQuantizer = (type: string, values: Float32Array, nPerRow: number) => Uint8Array

/** A tensor the generator writes, before its type is chosen. */
export interface PlannedTensor {
  readonly name: string
  readonly shape: readonly number[]
  /**
   * Standard deviation (and mean, default 0) of the random values, the spread of a norm weight
   * around one, or a token → expert table: `shape[0]` distinct expert ids below `experts` per row (I32).
   */
  readonly init:
    | { kind: 'uniform'; std: number; mean?: number }
    | { kind: 'around-one'; spread: number }
    | { kind: 'expert-ids'; experts: number }
}

export interface TypedTensor extends PlannedTensor {
  readonly type: GgmlType
}

/** The K-quant mixes need ggml's quantizer; the other types are written directly. */
export function isKQuantMix(type: GeneratedType): boolean {
  return type === 'q4_K' || type === 'q5_K' || type === 'q6_K' || type === 'q4_K_M'
}

const t = (name: keyof typeof ID): GgmlType => ggmlType(ID[name]) as GgmlType
const ID = { F32: 0, F16: 1, Q4_0: 2, Q5_0: 6, Q5_1: 7, Q8_0: 8, Q4_K: 12, Q5_K: 13, Q6_K: 14, I32: 26 } as const
const PURE: Record<'f32' | 'f16' | 'q8_0' | 'q4_0', keyof typeof ID> = {
  f32: 'F32',
  f16: 'F16',
  q8_0: 'Q8_0',
  q4_0: 'Q4_0',
}
const MIX_BASE: Record<'q4_K' | 'q5_K' | 'q6_K' | 'q4_K_M', keyof typeof ID> = {
  q4_K: 'Q4_K',
  q5_K: 'Q5_K',
  q6_K: 'Q6_K',
  q4_K_M: 'Q4_K',
}
/** tensor_type_fallback: a K type whose rows do not fill 256-value blocks becomes a 32-value type. */
const FALLBACK: Partial<Record<keyof typeof ID, keyof typeof ID>> = { Q4_K: 'Q5_0', Q5_K: 'Q5_1', Q6_K: 'Q8_0' }

/**
 * tensor_allows_quantization: 2-D and up, a weight, not a norm, the
 * MoE router, the hash-routing table or a delta-net conv kernel.
 */
function quantizable(tensor: PlannedTensor): boolean {
  const { name, shape } = tensor
  const kept = ['_norm.weight', 'ffn_gate_inp.weight', 'ffn_gate_tid2eid.weight', 'ssm_conv1d']
  return shape.length >= 2 && name.endsWith('weight') && !kept.some((k) => name.includes(k))
}

/** tensor_get_category, for the tensor names generated models have. */
function category(name: string): 'output' | 'token_embd' | 'attn_v' | 'attn_k' | 'attn_output' | 'ffn_down' | 'other' {
  if (name === 'output.weight') return 'output'
  if (name === 'token_embd.weight') return 'token_embd'
  // a fused attn_qkv counts as attn_v (category_is_attn_v)
  if (name.includes('attn_v.weight') || name.includes('attn_qkv.weight')) return 'attn_v'
  if (name.includes('attn_k.weight')) return 'attn_k'
  if (name.includes('attn_output.weight')) return 'attn_output'
  // ffn_up and ffn_gate come first in llama.cpp's checks but no mix we write changes them
  if (name.includes('ffn_down')) return 'ffn_down'
  return 'other'
}

/** llama.cpp's use_more_bits: the first and last eighth of the layers, and every third in between. */
function moreBits(layer: number, layers: number): boolean {
  const eighth = Math.floor(layers / 8)
  return layer < eighth || layer >= Math.floor((7 * layers) / 8) || (layer - eighth) % 3 === 2
}

/**
 * Each tensor's ggml type: the type itself for f32/f16/q8_0/q4_0 (every quantizable weight, as
 * llama-quantize --pure writes), llama_tensor_get_type's choice for the K-quant mixes. The router,
 * norms, biases and sinks stay f32, the hash-routing table I32.
 * `experts` and `layers` are the model's expert and block counts.
 */
export function chooseTypes(
  tensors: readonly PlannedTensor[],
  type: GeneratedType,
  experts: number,
  layers: number,
): TypedTensor[] {
  // the token → expert table is never quantized (it is not quantizable), and holds ids, not values
  return mixTypes(tensors, type, experts, layers).map((x) =>
    x.init.kind === 'expert-ids' ? { ...x, type: t('I32') } : x,
  )
}

function mixTypes(
  tensors: readonly PlannedTensor[],
  type: GeneratedType,
  experts: number,
  layers: number,
): TypedTensor[] {
  const f32 = t('F32')
  if (type === 'f32' || type === 'f16' || type === 'q8_0' || type === 'q4_0') {
    const weights = t(PURE[type])
    return tensors.map((x) => ({ ...x, type: quantizable(x) ? weights : f32 }))
  }
  const base = MIX_BASE[type]
  const tied = !tensors.some((x) => x.name === 'output.weight')
  const attnV = tensors.filter((x) => quantizable(x) && category(x.name) === 'attn_v').length
  let iAttnV = 0
  return tensors.map((x) => {
    if (!quantizable(x)) return { ...x, type: f32 }
    const cat = category(x.name)
    const layer = Number(/^blk\.(\d+)\./.exec(x.name)?.[1] ?? 0)
    const ne0 = x.shape[0] ?? 0
    let choice: keyof typeof ID = base
    if (cat === 'output' || (tied && cat === 'token_embd')) {
      choice = ne0 % 256 === 0 ? 'Q6_K' : 'Q8_0'
    } else if (cat === 'attn_v') {
      if (type === 'q4_K_M' && moreBits(iAttnV, attnV)) choice = 'Q6_K'
      else if (type === 'q4_K' && iAttnV < 4) choice = 'Q5_K'
      if (experts === 8) choice = 'Q8_0' // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
      iAttnV++
    } else if (cat === 'attn_k') {
      if (experts === 8) choice = 'Q8_0'
    } else if (cat === 'ffn_down') {
      if (type === 'q4_K_M' && moreBits(layer, layers)) choice = 'Q6_K'
      else if (type === 'q4_K' && layer < Math.floor(layers / 8)) choice = 'Q5_K'
    } else if (cat === 'attn_output') {
      if (experts === 8 && (type === 'q4_K' || type === 'q4_K_M')) choice = 'Q5_K'
    }
    const chosen = t(choice)
    if (ne0 % chosen.blockSize === 0) return { ...x, type: chosen }
    const fallback = t(FALLBACK[choice] ?? choice)
    return { ...x, type: ne0 % fallback.blockSize === 0 ? fallback : t('F16') }
  })
}

/** Elements generated per write; bounds memory whatever the model's size. */
const CHUNK_ELEMENTS = 1 << 22

/**
 * The tensor's bytes in chunks. f32 and f16 hold the random values; q8_0 and q4_0 tensors of the
 * plain types are random blocks; with a `quantize`r, quantized tensors are the random values run
 * through ggml's quantizer a few rows at a time, as llama-quantize writes them.
 */
export function* tensorChunks(spec: TypedTensor, rng: Sfc32, quantize?: RowQuantizer): Generator<Uint8Array> {
  const elements = spec.shape.reduce((p, d) => p * d, 1)
  if (spec.init.kind === 'expert-ids') {
    yield expertIds(spec.shape[0] ?? 1, elements / (spec.shape[0] ?? 1), spec.init.experts, rng)
    return
  }
  const std = spec.init.kind === 'uniform' ? spec.init.std : spec.init.spread / Math.sqrt(3)
  const centre = spec.init.kind === 'uniform' ? (spec.init.mean ?? 0) : 1
  // Uniform on [-a, a] has standard deviation a / √3.
  const amplitude = std * Math.sqrt(3)
  const values = (n: number) => {
    const out = new Float32Array(n)
    for (let i = 0; i < n; i++) out[i] = centre + amplitude * rng.signed()
    return out
  }
  const quantized = spec.type.id !== GgmlTypeId.F32 && spec.type.id !== GgmlTypeId.F16
  if (quantized && quantize) {
    const row = spec.shape[0] ?? 1
    const rowsPerChunk = Math.max(1, Math.floor(CHUNK_ELEMENTS / row))
    for (let done = 0; done < elements; done += rowsPerChunk * row) {
      yield quantize(
        spec.type.name.toLowerCase().replace(/_k$/, '_K'),
        values(Math.min(rowsPerChunk * row, elements - done)),
        row,
      )
    }
    return
  }
  const perChunk = alignUp(Math.min(elements, CHUNK_ELEMENTS), spec.type.blockSize)
  for (let done = 0; done < elements; done += perChunk) {
    const n = Math.min(perChunk, elements - done)
    switch (spec.type.id) {
      case GgmlTypeId.F32:
        yield new Uint8Array(values(n).buffer)
        break
      case GgmlTypeId.F16: {
        const out = new Uint16Array(n)
        for (let i = 0; i < n; i++) out[i] = f32ToF16(centre + amplitude * rng.signed())
        yield new Uint8Array(out.buffer)
        break
      }
      case GgmlTypeId.Q8_0:
        // int8 quants uniform on [-128, 127] have a standard deviation of about 73.9 steps.
        yield q8Blocks(n / 32, std / 73.9, rng)
        break
      case GgmlTypeId.Q4_0:
        // 4-bit quants (q - 8) uniform on [-7, 7] have a standard deviation of about 4.32 steps.
        yield q4Blocks(n / 32, std / 4.32, rng)
        break
      default:
        throw new Error(`${spec.name}: ${spec.type.name} tensors need ggml's quantizer`)
    }
  }
}

/** `rows` rows of `used` distinct expert ids each, drawn below `experts` (a partial Fisher–Yates shuffle per row). */
function expertIds(used: number, rows: number, experts: number, rng: Sfc32): Uint8Array {
  const out = new Int32Array(used * rows)
  const ids = Array.from({ length: experts }, (_, i) => i)
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < used; k++) {
      const j = k + (rng.next() % (experts - k))
      ;[ids[k], ids[j]] = [ids[j] as number, ids[k] as number]
      out[r * used + k] = ids[k] as number
    }
  }
  return new Uint8Array(out.buffer)
}

/**
 * Q4_0 blocks with quants drawn on [-7, 7]: the format allows -8 too, but uniform draws on
 * [-8, 7] average -0.5 steps, a bias every dot product sums up until the model emits one token.
 */
function q4Blocks(blocks: number, scale: number, rng: Sfc32): Uint8Array {
  const out = Buffer.allocUnsafe(blocks * 18)
  for (let b = 0, at = 0; b < blocks; b++, at += 18) {
    out.writeUInt16LE(blockScale(scale, rng), at)
    for (let i = 0; i < 16; i += 2) {
      const r = rng.next()
      out[at + 2 + i] = (1 + ((r & 0xff) % 15)) | ((1 + (((r >>> 8) & 0xff) % 15)) << 4)
      out[at + 3 + i] = (1 + (((r >>> 16) & 0xff) % 15)) | ((1 + ((r >>> 24) % 15)) << 4)
    }
  }
  return out
}

/** Q8_0 blocks: an f16 scale, then 32 random int8 quants. */
function q8Blocks(blocks: number, scale: number, rng: Sfc32): Uint8Array {
  const out = Buffer.allocUnsafe(blocks * 34)
  for (let b = 0, at = 0; b < blocks; b++, at += 34) {
    out.writeUInt16LE(blockScale(scale, rng), at)
    for (let w = 0; w < 8; w++) out.writeUInt32LE(rng.next(), at + 2 + w * 4)
  }
  return out
}

/**
 * A block's f16 scale in [0.75, 1.25) x `scale`: scales vary
 * from block to block, as they do in a quantized trained model.
 */
function blockScale(scale: number, rng: Sfc32): number {
  return f32ToF16(scale * (0.75 + 0.25 * (rng.signed() + 1)))
}
