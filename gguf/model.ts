import { type BlockCache, type Seam, tokenCacheBytes } from '../protocol'
import { blockCaches, defaultIndexerFull } from './block-cache'
import { blockSeams } from './block-seams'
import { GgufError } from './errors'
import { type GgufFile, type GgufTensor, kvValue } from './reader'

/** Where a tensor belongs when a model is cut into artifacts. */
export type TensorRole = 'embed' | 'block' | 'head' | 'shared'

export interface ModelHparams {
  readonly nLayer: number
  readonly nEmbd: number
  readonly nHead: number
  readonly nHeadKv: number
  readonly headDimK: number
  readonly headDimV: number
  readonly nFf: number
  readonly nVocab: number
  readonly contextLength: number
  readonly ropeFreqBase: number | undefined
  readonly rmsEps: number | undefined
}

export interface ModelLayout {
  readonly architecture: string
  readonly name: string
  readonly hparams: ModelHparams
  readonly embed: readonly GgufTensor[]
  /** blocks[i] = tensors of block i, in file order. */
  readonly blocks: readonly (readonly GgufTensor[])[]
  readonly head: readonly GgufTensor[]
  /** Tensors outside any block that every block needs (e.g. rope_freqs.weight). */
  readonly shared: readonly GgufTensor[]
  /**
   * The MTP (next-token prediction) blocks' tensors: blocks nLayer.. of `block_count`, the last
   * `nextn_predict_layers`. llama.cpp's main pass and our runtime never run them, so no artifact carries them.
   */
  readonly mtp: readonly GgufTensor[]
  /** No output.weight: the head computes logits with the token embedding. */
  readonly tiedEmbeddings: boolean
  readonly bytesPerBlock: readonly number[]
  /** Each block's cache cost (f16), index = block. */
  readonly cachePerBlock: readonly BlockCache[]
  /** What crosses each boundary 1..nLayer − 1 and whether a route may cut there. */
  readonly seams: readonly Seam[]
  /** Routed experts per mixture-of-experts block (`expert_count`); 0 for a dense model. */
  readonly experts: number
  /** The largest per-token cache cost of any block, for readers of manifests older than `cachePerBlock`. */
  readonly kvBytesPerTokenPerBlock: number
  readonly tensorBytes: number
  readonly parameters: number
}

const BLOCK = /^blk\.(\d+)\./
const EMBED = /^(token_embd|token_types|position_embd|token_embd_norm)\./
// deepseek4's hyper-connection head (output_hc_fn, _base, _scale) is llama.cpp's LLM_TENSOR_LAYER_OUTPUT too
const HEAD = /^(output|output_norm|output_hc_[a-z]+|cls|cls\.output)\./

/** Per-block tensors the runtime needs, for the architectures Neuron runs natively. */
const ATTENTION = [
  'attn_norm.weight',
  'attn_q.weight',
  'attn_k.weight',
  'attn_v.weight',
  'attn_output.weight',
  'ffn_norm.weight',
]
const DENSE_FFN = ['ffn_gate.weight', 'ffn_down.weight', 'ffn_up.weight']
const MOE_FFN = ['ffn_gate_inp.weight', 'ffn_gate_exps.weight', 'ffn_down_exps.weight', 'ffn_up_exps.weight']
const ARCH_EXTRA: Record<string, string[]> = {
  llama: [],
  qwen2: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias'],
  qwen3: ['attn_q_norm.weight', 'attn_k_norm.weight'],
}

export function roleOf(tensorName: string): TensorRole {
  if (BLOCK.test(tensorName)) return 'block'
  if (EMBED.test(tensorName)) return 'embed'
  if (HEAD.test(tensorName)) return 'head'
  return 'shared'
}

/** Reads a GGUF's architecture and cuts its tensors into embed, blocks and head; checks nothing is missing. */
export function describeModel(file: GgufFile): ModelLayout {
  const architecture = stringKv(file, 'general.architecture')
  if (architecture === undefined) {
    throw new GgufError(
      'bad_model',
      `${file.path} has no general.architecture key; it is not a model Neuron can split.`,
      { path: file.path },
    )
  }
  const num = (key: string): number | undefined => firstNumber(kvValue(file, `${architecture}.${key}`))
  const nLayerAll = num('block_count')
  const nEmbd = num('embedding_length')
  const nHead = num('attention.head_count')
  if (nLayerAll === undefined || nEmbd === undefined || nHead === undefined) {
    throw new GgufError(
      'bad_model',
      `${file.path} lacks ${architecture}.block_count, embedding_length or attention.head_count; convert it again ` +
        `with a current llama.cpp.`,
      {
        path: file.path,
      },
    )
  }
  // block_count counts the MTP blocks; the served blocks are the ones before them (llama_hparams::n_layer())
  const nextn = num('nextn_predict_layers') ?? 0
  if (!Number.isInteger(nextn) || nextn < 0 || nextn >= nLayerAll) {
    throw new GgufError(
      'bad_model',
      `${file.path}: ${architecture}.nextn_predict_layers is ${nextn}, which leaves none of its ${nLayerAll} ` +
        `blocks to serve; fix the metadata or convert it again.`,
      { path: file.path, key: `${architecture}.nextn_predict_layers` },
    )
  }
  const nLayer = nLayerAll - nextn
  const nHeadKv = num('attention.head_count_kv') ?? nHead
  const experts = num('expert_count') ?? 0
  const headDimK = num('attention.key_length') ?? Math.floor(nEmbd / nHead)
  const headDimV = num('attention.value_length') ?? Math.floor(nEmbd / nHead)
  const perBlock = (key: string) => kvValue(file, `${architecture}.${key}`)
  // The large targets' per-block facts, from the keys llama.cpp's deepseek4.cpp, glm-dsa.cpp and qwen35moe.cpp read.
  const indexerTypes = perBlock('attention.indexer.types')
  if (Array.isArray(indexerTypes) && indexerTypes.length !== nLayer) {
    throw new GgufError(
      'bad_model',
      `${file.path}: ${architecture}.attention.indexer.types names ${indexerTypes.length} blocks, but the model ` +
        `serves ${nLayer} (block_count less nextn_predict_layers); llama.cpp refuses it too. Convert it again.`,
      { path: file.path, key: `${architecture}.attention.indexer.types` },
    )
  }
  // an array names each block, one value applies to every block (llama.cpp's get_key_or_arr), no key: the defaults;
  // converters write it as int32 or as bools (true: full)
  const indexerFull = (il: number) => {
    if (indexerTypes === undefined) return defaultIndexerFull(num('context_length') ?? 0, il)
    const x = Array.isArray(indexerTypes) ? indexerTypes[il] : indexerTypes
    return x === true || (typeof x !== 'boolean' && (firstNumber(x) ?? 0) !== 0)
  }
  const ssm = (key: string) => num(`ssm.${key}`) ?? 0
  const interval = num('full_attention_interval') ?? 4
  const compressRatios = perBlock('attention.compress_ratios')
  const cachePerBlock = blockCaches({
    architecture,
    nLayer,
    nHeadKv: (il) => numberAt(kvValue(file, `${architecture}.attention.head_count_kv`), il) ?? nHead,
    headDimK,
    headDimV,
    kvLoraRank: num('attention.kv_lora_rank'),
    ropeDim: num('rope.dimension_count'),
    slidingWindow: num('attention.sliding_window'),
    slidingWindowPattern: flagsOrNumber(kvValue(file, `${architecture}.attention.sliding_window_pattern`)),
    compressRatios: Array.isArray(compressRatios) ? compressRatios.map(Number) : undefined,
    indexerHeadDim: num('attention.indexer.key_length'),
    indexerFull,
    // n_embd_r: (kernel − 1) × (inner + 2 × groups × state); n_embd_s: state × inner (llama-hparams.cpp)
    recurrent: (il) => (il + 1) % interval !== 0,
    recurrentStateValues:
      Math.max(0, ssm('conv_kernel') - 1) * (ssm('inner_size') + 2 * ssm('group_count') * ssm('state_size')) +
      ssm('state_size') * ssm('inner_size'),
  })
  const seams = blockSeams({
    architecture,
    nLayer,
    nEmbd,
    hyperConnections: num('hyper_connection.count'),
    hashLayers: num('hash_layer_count'),
    indexerFull,
    indexerTopK: num('attention.indexer.top_k'),
  })

  const embed: GgufTensor[] = []
  const head: GgufTensor[] = []
  const shared: GgufTensor[] = []
  const mtp: GgufTensor[] = []
  const blocks: GgufTensor[][] = Array.from({ length: nLayer }, () => [])
  for (const t of file.tensors) {
    const role = roleOf(t.name)
    if (role === 'block') {
      const index = Number(BLOCK.exec(t.name)?.[1])
      const block = blocks[index]
      if (block !== undefined) block.push(t)
      else if (index < nLayerAll) mtp.push(t)
      else {
        throw new GgufError(
          'bad_model',
          `${file.path}: tensor ${t.name} belongs to block ${index}, but the model declares ${nLayerAll} blocks.`,
          {
            path: file.path,
            tensor: t.name,
          },
        )
      }
    } else if (role === 'embed') embed.push(t)
    else if (role === 'head') head.push(t)
    else shared.push(t)
  }

  const tokenEmbd = embed.find((t) => t.name === 'token_embd.weight')
  if (tokenEmbd === undefined) missing(file, 'token_embd.weight', 'the token embedding')
  if (!head.some((t) => t.name === 'output_norm.weight')) missing(file, 'output_norm.weight', 'the output norm')
  const tiedEmbeddings = !head.some((t) => t.name === 'output.weight')
  checkBlocks(file, architecture, blocks)

  const nVocab = arrayLength(kvValue(file, 'tokenizer.ggml.tokens')) ?? tokenEmbd.shape[1] ?? 0
  const bytesPerBlock = blocks.map((b) => b.reduce((sum, t) => sum + t.bytes, 0))
  const tensorBytes = file.tensors.reduce((sum, t) => sum + t.bytes, 0)
  const parameters = file.tensors.reduce((sum, t) => sum + t.shape.reduce((p, d) => p * d, 1), 0)

  return {
    architecture,
    name: stringKv(file, 'general.name') ?? architecture,
    hparams: {
      nLayer,
      nEmbd,
      nHead,
      nHeadKv,
      headDimK,
      headDimV,
      nFf: num('feed_forward_length') ?? 0,
      nVocab,
      contextLength: num('context_length') ?? 0,
      ropeFreqBase: num('rope.freq_base'),
      rmsEps: num('attention.layer_norm_rms_epsilon'),
    },
    embed,
    blocks,
    head,
    shared,
    mtp,
    tiedEmbeddings,
    bytesPerBlock,
    cachePerBlock,
    experts,
    seams,
    kvBytesPerTokenPerBlock: Math.max(0, ...cachePerBlock.map(tokenCacheBytes)),
    tensorBytes,
    parameters,
  }
}

function checkBlocks(file: GgufFile, architecture: string, blocks: GgufTensor[][]): void {
  const extra = ARCH_EXTRA[architecture]
  // For unknown architectures we only know that blocks usually share one tensor set.
  const known = extra !== undefined
  const suffixes = (b: GgufTensor[]) => new Set(b.map((t) => t.name.replace(BLOCK, '')))
  const union = new Set(blocks.flatMap((b) => [...suffixes(b)]))
  blocks.forEach((block, i) => {
    if (block.length === 0) missing(file, `blk.${i}.*`, `block ${i}`)
    if (!known) return
    const have = suffixes(block)
    const ffn = have.has('ffn_gate_inp.weight') ? MOE_FFN : DENSE_FFN
    const required = [...ATTENTION, ...ffn, ...extra, ...union]
    for (const s of required) if (!have.has(s)) missing(file, `blk.${i}.${s}`, `block ${i}`)
  })
}

function missing(file: GgufFile, tensor: string, what: string): never {
  throw new GgufError(
    'missing_tensor',
    `${file.path} is missing tensor ${tensor} (${what}); the file is incomplete or not a complete model. ` +
      `Re-download or re-convert it.`,
    {
      path: file.path,
      tensor,
    },
  )
}

function stringKv(file: GgufFile, key: string): string | undefined {
  const v = kvValue(file, key)
  return typeof v === 'string' ? v : undefined
}

/** Some hyper-parameters are per-layer arrays; the first entry stands for all in summaries. */
function firstNumber(v: unknown): number | undefined {
  const x = Array.isArray(v) ? v[0] : v
  return typeof x === 'number' || typeof x === 'bigint' ? Number(x) : undefined
}

/** Entry il of a per-block array, or the one value every block shares. */
function numberAt(v: unknown, il: number): number | undefined {
  return Array.isArray(v) ? firstNumber(v[il]) : firstNumber(v)
}

/** A per-block array of flags (bools or 0/1 numbers), or one number. */
function flagsOrNumber(v: unknown): number | boolean[] | undefined {
  if (Array.isArray(v)) return v.map((x) => x === true || (typeof x !== 'boolean' && Number(x) !== 0))
  return firstNumber(v)
}

function arrayLength(v: unknown): number | undefined {
  return Array.isArray(v) ? v.length : undefined
}
