import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GGUFValueType } from '@huggingface/gguf'
import { z } from 'zod'
import { NeuronError } from '../protocol'
import type { GgufKv } from './reader'

/** A Hugging Face tokenizer as GGUF metadata, the way llama.cpp's convert_hf_to_gguf.py writes a byte-level BPE one. */
export interface TokenizerMetadata {
  readonly kvs: readonly GgufKv[]
  /** Tokens in the vocabulary: the model's embedding and output rows. */
  readonly size: number
  /** llama.cpp's pre-tokenizer name (tokenizer.ggml.pre). */
  readonly pre: string
}

/** Bytes a tokenizer.json may have (gpt-oss's is 27 MB). */
const MAX_TOKENIZER_BYTES = 64 << 20

const AddedToken = z.object({
  id: z.number().int().nonnegative(),
  content: z.string(),
  special: z.boolean().default(false),
  normalized: z.boolean().default(false),
})

const TokenizerJson = z.object({
  model: z.object({
    type: z.string(),
    vocab: z.record(z.string(), z.number().int().nonnegative()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])).default([]),
  }),
  added_tokens: z.array(AddedToken).default([]),
  pre_tokenizer: z.unknown(),
  post_processor: z.unknown(),
})

/** A token named in tokenizer_config.json: its text, or an AddedToken-like object. */
const NamedToken = z.union([z.string(), z.object({ content: z.string() })]).nullish()

const TokenizerConfig = z.object({
  bos_token: NamedToken,
  eos_token: NamedToken,
  pad_token: NamedToken,
  unk_token: NamedToken,
  add_bos_token: z.boolean().optional(),
  add_eos_token: z.boolean().optional(),
  chat_template: z.union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }))]).optional(),
})

/**
 * The Split regexes of the byte-level BPE pre-tokenizers llama.cpp knows, by its name for each (llama-vocab.cpp's
 * LLAMA_VOCAB_PRE_TYPE_*): Llama 3's, Qwen 2/3's (digits one by one), gpt-oss's o200k.
 */
const CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
const SPACES = '|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'
const UPPER = '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]'
const LOWER = '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]'
const PRE_TOKENIZERS: Readonly<Record<string, string>> = {
  [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*${SPACES}`]: 'llama-bpe',
  [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*${SPACES}`]: 'qwen2',
  [`[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS}?` +
    `|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*${SPACES}`]: 'gpt-4o',
  // DeepSeek V3 splits three times: digits by three, CJK runs, then words and punctuation.
  [[
    '\\p{N}{1,3}',
    '[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+',
    '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+' +
      '| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+',
  ].join('\n')]: 'deepseek-v3',
}

// llama.cpp's token types (llama_token_type).
const NORMAL = 1
const CONTROL = 3
const USER_DEFINED = 4
const UNUSED = 5

/**
 * Reads a Hugging Face tokenizer folder (tokenizer.json, and where present tokenizer_config.json, chat_template.jinja
 * and config.json's vocab_size) and writes its vocabulary, merges, special tokens and chat template as GGUF metadata:
 * ids without a token become `[PADi]`, added tokens that are special (or look it: `<|…|>`) are CONTROL, other added
 * tokens USER_DEFINED, as convert_hf_to_gguf.py does. Byte-level BPE only (Llama 3, Qwen, gpt-oss, DeepSeek V3).
 */
export async function hfTokenizerMetadata(dir: string): Promise<TokenizerMetadata> {
  const tokenizer = parse(TokenizerJson, await readJson(join(dir, 'tokenizer.json'), true), 'tokenizer.json', dir)
  const config = parse(
    TokenizerConfig,
    (await readJson(join(dir, 'tokenizer_config.json'), false)) ?? {},
    'tokenizer_config.json',
    dir,
  )
  const modelConfig = z
    .object({ vocab_size: z.number().int().positive().max(4_000_000).optional() })
    .passthrough()
    .parse((await readJson(join(dir, 'config.json'), false)) ?? {})
  if (tokenizer.model.type !== 'BPE')
    throw new NeuronError(
      'bad_tokenizer',
      `${dir}/tokenizer.json is a ${tokenizer.model.type} model; only byte-level BPE converts`,
    )
  const pre = preTokenizerName(tokenizer.pre_tokenizer, dir)

  const added = new Map(tokenizer.added_tokens.map((t) => [t.id, t]))
  const byId = new Map<number, string>()
  for (const [text, id] of Object.entries(tokenizer.model.vocab)) byId.set(id, text)
  let size = modelConfig.vocab_size ?? 0
  for (const id of [...byId.keys(), ...added.keys()]) size = Math.max(size, id + 1)
  if (size > 4_000_000)
    throw new NeuronError('bad_tokenizer', `${dir}: a token id of ${size - 1} is past any vocabulary`)
  const tokens: string[] = []
  const types: number[] = []
  for (let id = 0; id < size; id++) {
    const extra = added.get(id)
    if (extra !== undefined) {
      const control = extra.special || looksSpecial(extra.content)
      tokens.push(control ? extra.content : extra.content.replaceAll('\u2581', ' '))
      types.push(control ? CONTROL : USER_DEFINED)
    } else if (byId.has(id)) {
      tokens.push(byId.get(id) as string)
      types.push(NORMAL)
    } else {
      tokens.push(`[PAD${id}]`)
      types.push(UNUSED)
    }
  }
  const idOf = (named: z.infer<typeof NamedToken>): number | undefined => {
    const text = typeof named === 'string' ? named : named?.content
    if (text === undefined) return undefined
    const id = tokenizer.added_tokens.find((t) => t.content === text)?.id ?? tokenizer.model.vocab[text]
    return id
  }
  const bos = idOf(config.bos_token)
  const eos = idOf(config.eos_token)
  const pad = idOf(config.pad_token)
  const unk = idOf(config.unk_token)
  const template = await chatTemplate(config.chat_template, dir)
  const u32 = (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.UINT32, value })
  const bool = (key: string, value: boolean): GgufKv => ({ key, type: GGUFValueType.BOOL, value })
  const strings = (key: string, value: string[]): GgufKv => ({
    key,
    type: GGUFValueType.ARRAY,
    subType: GGUFValueType.STRING,
    value,
  })
  return {
    size,
    pre,
    kvs: [
      { key: 'tokenizer.ggml.model', type: GGUFValueType.STRING, value: 'gpt2' },
      { key: 'tokenizer.ggml.pre', type: GGUFValueType.STRING, value: pre },
      strings('tokenizer.ggml.tokens', tokens),
      { key: 'tokenizer.ggml.token_type', type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value: types },
      strings(
        'tokenizer.ggml.merges',
        tokenizer.model.merges.map((m) => (typeof m === 'string' ? m : m.join(' '))),
      ),
      ...(bos === undefined ? [] : [u32('tokenizer.ggml.bos_token_id', bos)]),
      ...(eos === undefined ? [] : [u32('tokenizer.ggml.eos_token_id', eos)]),
      ...(unk === undefined ? [] : [u32('tokenizer.ggml.unknown_token_id', unk)]),
      ...(pad === undefined ? [] : [u32('tokenizer.ggml.padding_token_id', pad)]),
      bool('tokenizer.ggml.add_bos_token', addsBos(config.add_bos_token, tokenizer.post_processor, bos, pre)),
      bool('tokenizer.ggml.add_eos_token', config.add_eos_token ?? false),
      ...(template === undefined
        ? []
        : [{ key: 'tokenizer.chat_template', type: GGUFValueType.STRING, value: template }]),
    ],
  }
}

/** convert_hf_to_gguf.py's does_token_look_special. */
function looksSpecial(text: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) ||
    (text.startsWith('<|') && text.endsWith('|>')) ||
    (text.startsWith('<｜') && text.endsWith('｜>')) ||
    (text.startsWith('<unused') && text.endsWith('>')) ||
    (text.startsWith('<start_of_') && text.endsWith('>')) ||
    (text.startsWith('<end_of_') && text.endsWith('>'))
  )
}

function preTokenizerName(pre: unknown, dir: string): string {
  // Every Split's regex, in order, one per line: the key PRE_TOKENIZERS is written in.
  const patterns = [...JSON.stringify(pre ?? null).matchAll(/"Regex":("(?:[^"\\]|\\.)*")/g)]
  const name = PRE_TOKENIZERS[patterns.map((m) => JSON.parse(m[1] as string) as string).join('\n')]
  if (name === undefined) {
    throw new NeuronError(
      'bad_tokenizer',
      `${dir}/tokenizer.json splits text with a pre-tokenizer Neuron does not know; known: Llama 3 (llama-bpe), ` +
        'Qwen 2/3 (qwen2), gpt-oss (gpt-4o), DeepSeek V3 (deepseek-v3)',
    )
  }
  return name
}

/**
 * Whether the model wants BOS first: tokenizer_config.json's add_bos_token, else a post-processor template starting
 * with it, else Llama 3's habit (its GGUFs set it; its tokenizer.json copies without the template lose it).
 */
function addsBos(stated: boolean | undefined, post: unknown, bos: number | undefined, pre: string): boolean {
  if (stated !== undefined) return stated
  if (bos === undefined) return false
  const single = (post as { single?: { SpecialToken?: { id?: string } }[] } | null)?.single
  if (single?.[0]?.SpecialToken !== undefined) return true
  return pre === 'llama-bpe'
}

async function chatTemplate(stated: z.infer<typeof TokenizerConfig>['chat_template'], dir: string) {
  if (typeof stated === 'string') return stated
  const named = stated?.find((t) => t.name === 'default') ?? stated?.[0]
  if (named !== undefined) return named.template
  return (await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => undefined)) || undefined
}

async function readJson(path: string, required: boolean): Promise<unknown> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (!required && error.code === 'ENOENT') return undefined
    throw new NeuronError('bad_tokenizer', `cannot read ${path} (${error.code ?? error.message})`)
  })
  if (text === undefined) return undefined
  if (text.length > MAX_TOKENIZER_BYTES) throw new NeuronError('bad_tokenizer', `${path} is larger than 64 MB`)
  try {
    return JSON.parse(text)
  } catch {
    throw new NeuronError('bad_tokenizer', `${path} is not JSON`)
  }
}

function parse<T extends z.ZodTypeAny>(schema: T, value: unknown, file: string, dir: string): z.infer<T> {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  throw new NeuronError(
    'bad_tokenizer',
    `${dir}/${file} is not a Hugging Face tokenizer file (${issue?.path.join('.')}: ${issue?.message})`,
  )
}
