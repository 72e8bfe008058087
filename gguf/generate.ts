import { open, rename, rm } from 'node:fs/promises'
import { GGUFValueType } from '@huggingface/gguf'
import { NeuronError } from '../protocol'
import {
  archMetadata,
  archProblems,
  GENERATED_ARCHS,
  type GenerateOptions,
  ggufArch,
  type MoeShape,
  moeShape,
  plannedTensors,
} from './generate-archs'
import { chooseTypes, FILE_TYPE, GENERATED_TYPES, isKQuantMix, type TypedTensor, tensorChunks } from './generate-quant'
import { tensorBytes } from './ggml-types'
import { hashName, Sfc32 } from './random'
import type { GgufKv } from './reader'
import { serializeHeader } from './writer'

export { GENERATED_ARCHS, type GeneratedArch, type GenerateOptions, type MoeOptions } from './generate-archs'
export { GENERATED_TYPES, type GeneratedType, type RowQuantizer } from './generate-quant'

const SPECIAL_TOKENS = ['<unk>', '<s>', '</s>']
const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + " +
  "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

/**
 * Writes a model with random weights that llama.cpp loads: the architecture's real tensor set
 * and hyper-parameters, a SentencePiece vocabulary with byte fallback, a ChatML template.
 * Random weights cost exactly what trained ones do, so these models serve tests and benchmarks.
 */
export async function generateModel(
  options: GenerateOptions,
): Promise<{ path: string; bytes: number; parameters: number }> {
  const moe = validate(options)
  const tensors = chooseTypes(plannedTensors(options, moe), options.type, moe.experts, options.blocks)
  checkWidths(options, tensors)
  const layouts = tensors.map((t) => ({ ...t, bytes: tensorBytes(t.type, t.shape) ?? 0 }))
  const header = serializeHeader(metadata(options, moe), layouts, 32)
  const quantize = isKQuantMix(options.type) ? options.quantize : undefined
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
      for (const chunk of tensorChunks(spec, rng, quantize)) await write(chunk)
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

function fail(message: string): never {
  throw new NeuronError('bad_option', message)
}

/** Refuses, in one line, any shape llama.cpp would refuse or abort on; returns the expert shape. */
function validate(o: GenerateOptions): MoeShape {
  if (!GENERATED_ARCHS.includes(o.arch)) fail(`--arch must be one of ${GENERATED_ARCHS.join(', ')}, not "${o.arch}".`)
  if (!GENERATED_TYPES.includes(o.type)) fail(`--type must be one of ${GENERATED_TYPES.join(', ')}, not "${o.type}".`)
  for (const [name, v] of Object.entries({
    blocks: o.blocks,
    embd: o.embd,
    heads: o.heads,
    'kv-heads': o.kvHeads,
    ff: o.ff,
    vocab: o.vocab,
  })) {
    if (!Number.isSafeInteger(v) || v < 1) fail(`--${name} must be a whole number above 0, not ${v}.`)
  }
  if (o.blocks > 512) fail(`--blocks must be at most 512 (llama.cpp's LLAMA_MAX_LAYERS), not ${o.blocks}.`)
  if (o.embd % o.heads !== 0) fail(`--embd ${o.embd} must be a multiple of --heads ${o.heads}.`)
  if (o.heads % o.kvHeads !== 0) fail(`--heads ${o.heads} must be a multiple of --kv-heads ${o.kvHeads}.`)
  if ((o.embd / o.heads) % 2 !== 0)
    fail(`the head size (--embd / --heads = ${o.embd / o.heads}) must be even for rotary embeddings.`)
  if (o.tokenizer !== undefined && o.vocab !== o.tokenizer.size)
    fail(`--vocab must be the tokenizer's ${o.tokenizer.size} tokens, not ${o.vocab}.`)
  const minVocab = SPECIAL_TOKENS.length + 256 + 1
  if (o.tokenizer === undefined && o.vocab < minVocab)
    fail(`--vocab must be at least ${minVocab} (3 special tokens, 256 byte tokens, one word), not ${o.vocab}.`)
  if (!Number.isSafeInteger(o.seed) || o.seed < 0) fail(`--seed must be a whole number of at least 0, not ${o.seed}.`)
  if (o.tied && o.arch === 'gpt-oss') fail('gpt-oss always has its own output.weight; drop --tied.')
  if (isKQuantMix(o.type) && !o.quantize)
    fail(`--type ${o.type} needs ggml's quantizer: pass \`quantize\` (native quantizeRows).`)
  const moe = moeShape(o)
  const problems = archProblems(o, moe)
  if (problems[0] !== undefined) fail(problems[0])
  return moe
}

/** Plain q8_0 / q4_0 files quantize every weight; the K-quant mixes fall back to narrower blocks as llama.cpp does. */
function checkWidths(o: GenerateOptions, tensors: readonly TypedTensor[]): void {
  const odd = tensors.find((t) => (t.shape[0] ?? 0) % t.type.blockSize !== 0)
  if (odd === undefined) return
  const n = odd.type.blockSize
  fail(
    `${o.type} packs ${n} values per block, but ${odd.name} has rows of ${odd.shape[0]}: --embd, --ff and the ` +
      `expert and MLA widths must be multiples of ${n} (or use a K-quant type).`,
  )
}

function metadata(o: GenerateOptions, moe: MoeShape): GgufKv[] {
  const u32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.UINT32, value })
  const str = (key: string, value: string): GgufKv => ({ key, type: GGUFValueType.STRING, value })
  return [
    str('general.architecture', ggufArch(o.arch)),
    str('general.name', `neuron-random-${o.arch}-${o.blocks}x${o.embd}-${o.type}-seed${o.seed}`),
    u32('general.file_type', FILE_TYPE[o.type]),
    ...(o.type.startsWith('q') ? [u32('general.quantization_version', 2)] : []),
    ...archMetadata(o, moe),
    ...(o.tokenizer?.kvs ?? spmTokenizer(vocabulary(o.vocab))),
  ]
}

/** The made-up SentencePiece vocabulary's metadata, with a ChatML template. */
function spmTokenizer(vocab: ReturnType<typeof vocabulary>): GgufKv[] {
  const u32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.UINT32, value })
  const str = (key: string, value: string): GgufKv => ({ key, type: GGUFValueType.STRING, value })
  return [
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
