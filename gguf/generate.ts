import { open, rename, rm } from 'node:fs/promises'
import { GGUFValueType } from '@huggingface/gguf'
import { f32ToF16, NeuronError } from '../protocol'
import { alignUp, type GgmlType, GgmlTypeId, ggmlType, tensorBytes } from './ggml-types'
import { hashName, Sfc32 } from './random'
import type { GgufKv } from './reader'
import { serializeHeader } from './writer'

export const GENERATED_ARCHS = ['llama', 'qwen2', 'qwen3'] as const
export type GeneratedArch = (typeof GENERATED_ARCHS)[number]
export const GENERATED_TYPES = ['f32', 'f16', 'q8_0', 'q4_0'] as const
export type GeneratedType = (typeof GENERATED_TYPES)[number]

export interface GenerateOptions {
  readonly arch: GeneratedArch
  readonly blocks: number
  readonly embd: number
  readonly heads: number
  readonly kvHeads: number
  readonly ff: number
  readonly vocab: number
  readonly type: GeneratedType
  readonly seed: number
  readonly out: string
  /** Omit output.weight: logits come from the token embedding (as small Qwen models do). */
  readonly tied?: boolean
  readonly contextLength?: number
}

interface TensorSpec {
  readonly name: string
  readonly type: GgmlType
  readonly shape: readonly number[]
  readonly bytes: number
  /** Standard deviation of the random values, or the centre-and-spread of a norm weight. */
  readonly init: { kind: 'uniform'; std: number } | { kind: 'around-one'; spread: number }
}

const TYPE_ID: Record<GeneratedType, number> = { f32: GgmlTypeId.F32, f16: GgmlTypeId.F16, q8_0: GgmlTypeId.Q8_0, q4_0: GgmlTypeId.Q4_0 }
/** llama_ftype: ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_Q4_0 = 2, MOSTLY_Q8_0 = 7. */
const FILE_TYPE: Record<GeneratedType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 7 }
const SPECIAL_TOKENS = ['<unk>', '<s>', '</s>']
const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
/** Elements generated per write; bounds memory whatever the model's size. */
const CHUNK_ELEMENTS = 1 << 22

/**
 * Writes a model with random weights that llama.cpp loads: the architecture's real tensor set
 * and hyper-parameters, a SentencePiece vocabulary with byte fallback, a ChatML template.
 * Random weights cost exactly what trained ones do, so these models serve tests and benchmarks.
 */
export async function generateModel(options: GenerateOptions): Promise<{ path: string; bytes: number; parameters: number }> {
  validate(options)
  const tensors = tensorSpecs(options)
  const header = serializeHeader(metadata(options), tensors, 32)
  const staging = `${options.out}.partial-${process.pid}`
  const fh = await open(staging, 'w')
  try {
    let position = 0
    const write = async (bytes: Uint8Array) => {
      await fh.write(bytes, 0, bytes.length, position)
      position += bytes.length
    }
    await write(header.bytes)
    for (const [i, spec] of tensors.entries()) {
      const start = header.bytes.length + (header.dataOffsets[i] ?? 0)
      if (start > position) await write(new Uint8Array(start - position))
      const rng = new Sfc32(options.seed, hashName(spec.name))
      for (const chunk of tensorChunks(spec, rng)) await write(chunk)
    }
  } catch (error) {
    await fh.close()
    await rm(staging, { force: true })
    throw error
  }
  await fh.close()
  await rename(staging, options.out)
  const parameters = tensors.reduce((sum, t) => sum + t.shape.reduce((p, d) => p * d, 1), 0)
  return { path: options.out, bytes: header.fileBytes, parameters }
}

function validate(o: GenerateOptions): void {
  const fail = (message: string) => {
    throw new NeuronError('bad_option', message)
  }
  if (!GENERATED_ARCHS.includes(o.arch)) fail(`--arch must be one of ${GENERATED_ARCHS.join(', ')}, not "${o.arch}".`)
  if (!GENERATED_TYPES.includes(o.type)) fail(`--type must be one of ${GENERATED_TYPES.join(', ')}, not "${o.type}".`)
  for (const [name, v] of Object.entries({ blocks: o.blocks, embd: o.embd, heads: o.heads, 'kv-heads': o.kvHeads, ff: o.ff, vocab: o.vocab })) {
    if (!Number.isSafeInteger(v) || v < 1) fail(`--${name} must be a whole number above 0, not ${v}.`)
  }
  if (o.embd % o.heads !== 0) fail(`--embd ${o.embd} must be a multiple of --heads ${o.heads}.`)
  if (o.heads % o.kvHeads !== 0) fail(`--heads ${o.heads} must be a multiple of --kv-heads ${o.kvHeads}.`)
  if ((o.embd / o.heads) % 2 !== 0) fail(`the head size (--embd / --heads = ${o.embd / o.heads}) must be even for rotary embeddings.`)
  const block = ggmlType(TYPE_ID[o.type])?.blockSize ?? 1
  if (o.embd % block !== 0 || o.ff % block !== 0)
    fail(`${o.type} packs ${block} values per block: --embd (${o.embd}) and --ff (${o.ff}) must be multiples of ${block}.`)
  const minVocab = SPECIAL_TOKENS.length + 256 + 1
  if (o.vocab < minVocab) fail(`--vocab must be at least ${minVocab} (3 special tokens, 256 byte tokens, one word), not ${o.vocab}.`)
  if (!Number.isSafeInteger(o.seed) || o.seed < 0) fail(`--seed must be a whole number of at least 0, not ${o.seed}.`)
}

function tensorSpecs(o: GenerateOptions): TensorSpec[] {
  const weightType = ggmlType(TYPE_ID[o.type]) as GgmlType
  const f32 = ggmlType(GgmlTypeId.F32) as GgmlType
  const headDim = o.embd / o.heads
  const kvDim = headDim * o.kvHeads
  const spec = (name: string, shape: number[], init: TensorSpec['init'], type = shape.length === 1 ? f32 : weightType): TensorSpec => ({
    name,
    type,
    shape,
    bytes: tensorBytes(type, shape) ?? 0,
    init,
  })
  const dense = (name: string, nIn: number, nOut: number) => spec(name, [nIn, nOut], { kind: 'uniform', std: 1 / Math.sqrt(nIn) })
  const norm = (name: string, n: number) => spec(name, [n], { kind: 'around-one', spread: 0.1 })
  // Logits with a spread of a few units, so greedy choices are clear rather than near-ties.
  const outputStd = 3.5 / Math.sqrt(o.embd)
  const tensors: TensorSpec[] = [spec('token_embd.weight', [o.embd, o.vocab], { kind: 'uniform', std: o.tied ? outputStd : 1 })]
  for (let i = 0; i < o.blocks; i++) {
    const b = `blk.${i}`
    tensors.push(norm(`${b}.attn_norm.weight`, o.embd))
    tensors.push(dense(`${b}.attn_q.weight`, o.embd, o.embd))
    tensors.push(dense(`${b}.attn_k.weight`, o.embd, kvDim))
    tensors.push(dense(`${b}.attn_v.weight`, o.embd, kvDim))
    if (o.arch === 'qwen2') {
      for (const [name, n] of [
        ['q', o.embd],
        ['k', kvDim],
        ['v', kvDim],
      ] as const)
        tensors.push(spec(`${b}.attn_${name}.bias`, [n], { kind: 'uniform', std: 0.1 }))
    }
    if (o.arch === 'qwen3') {
      tensors.push(norm(`${b}.attn_q_norm.weight`, headDim))
      tensors.push(norm(`${b}.attn_k_norm.weight`, headDim))
    }
    tensors.push(dense(`${b}.attn_output.weight`, o.embd, o.embd))
    tensors.push(norm(`${b}.ffn_norm.weight`, o.embd))
    tensors.push(dense(`${b}.ffn_gate.weight`, o.embd, o.ff))
    tensors.push(dense(`${b}.ffn_down.weight`, o.ff, o.embd))
    tensors.push(dense(`${b}.ffn_up.weight`, o.embd, o.ff))
  }
  tensors.push(norm('output_norm.weight', o.embd))
  if (!o.tied) tensors.push(spec('output.weight', [o.embd, o.vocab], { kind: 'uniform', std: outputStd }))
  return tensors
}

function metadata(o: GenerateOptions): GgufKv[] {
  const u32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.UINT32, value })
  const f32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.FLOAT32, value })
  const str = (key: string, value: string): GgufKv => ({ key, type: GGUFValueType.STRING, value })
  const a = o.arch
  const qwen = a !== 'llama'
  const vocab = vocabulary(o.vocab)
  return [
    str('general.architecture', a),
    str('general.name', `neuron-random-${a}-${o.blocks}x${o.embd}-${o.type}-seed${o.seed}`),
    u32('general.file_type', FILE_TYPE[o.type]),
    ...(o.type.startsWith('q') ? [u32('general.quantization_version', 2)] : []),
    u32(`${a}.context_length`, o.contextLength ?? 4096),
    u32(`${a}.embedding_length`, o.embd),
    u32(`${a}.feed_forward_length`, o.ff),
    u32(`${a}.block_count`, o.blocks),
    u32(`${a}.attention.head_count`, o.heads),
    u32(`${a}.attention.head_count_kv`, o.kvHeads),
    u32(`${a}.rope.dimension_count`, o.embd / o.heads),
    f32(`${a}.rope.freq_base`, qwen ? 1_000_000 : 10_000),
    f32(`${a}.attention.layer_norm_rms_epsilon`, qwen ? 1e-6 : 1e-5),
    str('tokenizer.ggml.model', 'llama'),
    { key: 'tokenizer.ggml.tokens', type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING, value: vocab.tokens },
    { key: 'tokenizer.ggml.scores', type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32, value: vocab.scores },
    { key: 'tokenizer.ggml.token_type', type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value: vocab.types },
    u32('tokenizer.ggml.unknown_token_id', 0),
    u32('tokenizer.ggml.bos_token_id', 1),
    u32('tokenizer.ggml.eos_token_id', 2),
    { key: 'tokenizer.ggml.add_bos_token', type: GGUFValueType.BOOL, value: true },
    { key: 'tokenizer.ggml.add_eos_token', type: GGUFValueType.BOOL, value: false },
    str('tokenizer.chat_template', CHATML_TEMPLATE),
  ]
}

/** SentencePiece-style vocabulary: specials, 256 byte-fallback tokens, then made-up words. */
function vocabulary(size: number): { tokens: string[]; scores: number[]; types: number[] } {
  const tokens = [...SPECIAL_TOKENS]
  const types = [2, 3, 3] // UNKNOWN, CONTROL, CONTROL
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
    types.push(6) // BYTE
  }
  const letters = 'etaoinshrdlucmfwypvbgkjqxz'
  for (let i = 0; tokens.length < size; i++) {
    let word = ''
    for (let n = i; ; n = Math.floor(n / letters.length) - 1) {
      word = letters[n % letters.length] + word
      if (n < letters.length) break
    }
    tokens.push(`▁${word}`)
    types.push(1) // NORMAL
  }
  const scores = tokens.map((_, i) => (i < SPECIAL_TOKENS.length + 256 ? 0 : -(i - SPECIAL_TOKENS.length - 256)))
  return { tokens, scores, types }
}

function* tensorChunks(spec: TensorSpec, rng: Sfc32): Generator<Uint8Array> {
  const elements = spec.shape.reduce((p, d) => p * d, 1)
  const std = spec.init.kind === 'uniform' ? spec.init.std : spec.init.spread / Math.sqrt(3)
  const centre = spec.init.kind === 'uniform' ? 0 : 1
  // Uniform on [-a, a] has standard deviation a / √3.
  const amplitude = std * Math.sqrt(3)
  const perChunk = alignUp(Math.min(elements, CHUNK_ELEMENTS), spec.type.blockSize)
  for (let done = 0; done < elements; done += perChunk) {
    const n = Math.min(perChunk, elements - done)
    switch (spec.type.id) {
      case GgmlTypeId.F32: {
        const out = new Float32Array(n)
        for (let i = 0; i < n; i++) out[i] = centre + amplitude * rng.signed()
        yield new Uint8Array(out.buffer)
        break
      }
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
        throw new Error(`cannot generate ${spec.type.name} tensors`)
    }
  }
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

/** A block's f16 scale in [0.75, 1.25) x `scale`: scales vary from block to block, as they do in a quantized trained model. */
function blockScale(scale: number, rng: Sfc32): number {
  return f32ToF16(scale * (0.75 + 0.25 * (rng.signed() + 1)))
}
