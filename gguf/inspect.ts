import { type BlockCache, type BlockRange, cacheGroups } from '../protocol'
import type { ConfigEstimate } from './config-manifest'
import { describeModel, type ModelLayout } from './model'
import { type GgufFile, readGguf } from './reader'

export interface ModelReport {
  readonly file: string
  readonly fileBytes: number
  readonly ggufVersion: number
  readonly alignment: number
  readonly architecture: string
  readonly name: string
  readonly hparams: ModelLayout['hparams']
  readonly parameters: number
  readonly tensorCount: number
  readonly tensorBytes: number
  /** Count and bytes of tensors per ggml type, e.g. { Q8_0: { tensors: 154, bytes: … } }. */
  readonly tensorTypes: Record<string, { tensors: number; bytes: number }>
  readonly bytesPerBlock: readonly number[]
  readonly embedBytes: number
  readonly headBytes: number
  /** The MTP blocks' tensors (after nLayer), which no host serves. */
  readonly mtpBytes: number
  readonly kvBytesPerTokenPerBlock: number
  readonly cachePerBlock: readonly BlockCache[]
  readonly tiedEmbeddings: boolean
}

/** What `neuron inspect` shows: enough to plan how a model spreads over hosts. */
export async function inspectModel(path: string): Promise<ModelReport> {
  const file: GgufFile = await readGguf(path)
  const model = describeModel(file)
  const tensorTypes: Record<string, { tensors: number; bytes: number }> = {}
  for (const t of file.tensors) {
    const entry = tensorTypes[t.type.name] ?? { tensors: 0, bytes: 0 }
    tensorTypes[t.type.name] = entry
    entry.tensors += 1
    entry.bytes += t.bytes
  }
  const sum = (ts: readonly { bytes: number }[]) => ts.reduce((s, t) => s + t.bytes, 0)
  return {
    file: path,
    fileBytes: file.fileBytes,
    ggufVersion: file.version,
    alignment: file.alignment,
    architecture: model.architecture,
    name: model.name,
    hparams: model.hparams,
    parameters: model.parameters,
    tensorCount: file.tensors.length,
    tensorBytes: model.tensorBytes,
    tensorTypes,
    bytesPerBlock: model.bytesPerBlock,
    embedBytes: sum(model.embed),
    headBytes: sum(model.head),
    mtpBytes: sum(model.mtp),
    kvBytesPerTokenPerBlock: model.kvBytesPerTokenPerBlock,
    cachePerBlock: model.cachePerBlock,
    tiedEmbeddings: model.tiedEmbeddings,
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`
}

export function formatReport(r: ModelReport): string {
  const h = r.hparams
  const blocks = r.bytesPerBlock
  const min = Math.min(...blocks)
  const max = Math.max(...blocks)
  const types = Object.entries(r.tensorTypes)
    .map(([name, t]) => `${name} ×${t.tensors} (${formatBytes(t.bytes)})`)
    .join(', ')
  return [
    `${r.file}`,
    `  model         ${r.name} — ${r.architecture}, ${(r.parameters / 1e6).toFixed(r.parameters < 1e7 ? 2 : 0)}M ` +
      `parameters, GGUF v${r.ggufVersion}`,
    `  blocks        ${h.nLayer} × ${min === max ? formatBytes(min) : `${formatBytes(min)}–${formatBytes(max)}`}`,
    `  embedding     ${h.nEmbd} wide, vocabulary ${h.nVocab}, context ${h.contextLength}`,
    `  attention     ${h.nHead} heads, ${h.nHeadKv} KV heads, head size ` +
      `${h.headDimK}${h.headDimV === h.headDimK ? '' : `/${h.headDimV}`}`,
    `  feed-forward  ${h.nFf}`,
    `  rope base     ${h.ropeFreqBase ?? 'default'}, rms eps ` +
      `${h.rmsEps === undefined ? 'default' : Number(h.rmsEps.toPrecision(6))}`,
    `  tensor types  ${types}`,
    `  embed         ${formatBytes(r.embedBytes)}`,
    `  head          ${formatBytes(r.headBytes)}${r.tiedEmbeddings ? ' (tied: reuses the token embedding)' : ''}`,
    ...(r.mtpBytes > 0
      ? [`  mtp           ${formatBytes(r.mtpBytes)} (next-token prediction blocks: not served, in no artifact)`]
      : []),
    ...formatCache(r.cachePerBlock).map((line, i) => `${i === 0 ? '  cache (f16)   ' : '                '}${line}`),
    `  total         ${formatBytes(r.fileBytes)} on disk, ${formatBytes(r.tensorBytes)} of tensors`,
  ].join('\n')
}

/**
 * A model served by hosts of one size (tracker/placement/route-size.ts
 * computes it): what `neuron inspect --config` adds.
 */
export interface ServingPreview {
  /** Memory each host may use: weights, embed or head at the ends, and cache at the placement budget. */
  readonly usableBytes: number
  /** The ranges of the fewest such hosts that carry a route; null when a block fits none. */
  readonly ranges: readonly BlockRange[] | null
  /** f16 bytes one token sends across a cut, over the model's inner boundaries. */
  readonly seamBytesPerToken: { readonly min: number; readonly max: number }
  readonly longContextTokens: number
  /** Every block's cache for one session of longContextTokens, fixed state included. */
  readonly longContextCacheBytes: number
}

/**
 * What `neuron inspect --config` shows: the model's sizes at
 * Q4_K_M from its config alone, and hosts per route when given.
 */
export function formatEstimate(e: ConfigEstimate, source: string, serving?: ServingPreview): string {
  const min = Math.min(...e.bytesPerBlock)
  const max = Math.max(...e.bytesPerBlock)
  const total = e.bytesPerBlock.reduce((s, b) => s + b, 0) + e.embedBytes + e.headBytes
  return [
    `${source} (estimated at Q4_K_M from the config; no weights read)`,
    `  model         ${e.name} — ${e.architecture}, ${e.nLayer} blocks`,
    `  blocks        ${e.nLayer} × ${min === max ? formatBytes(min) : `${formatBytes(min)}–${formatBytes(max)}`}`,
    `  embedding     ${e.nEmbd} wide, vocabulary ${e.nVocab}, context ${e.contextLength}`,
    ...formatCache(e.cachePerBlock).map((line, i) => `${i === 0 ? '  cache (f16)   ' : '                '}${line}`),
    `  embed         ${formatBytes(e.embedBytes)}`,
    `  head          ${formatBytes(e.headBytes)}`,
    `  total         ${formatBytes(total)} of tensors`,
    ...(serving === undefined ? [] : formatServing(serving)),
  ].join('\n')
}

function formatServing(p: ServingPreview): string[] {
  const gb = `${(p.usableBytes / 1e9).toFixed(p.usableBytes % 1e9 === 0 ? 0 : 1)} GB`
  const lengths = p.ranges?.map(([a, b]) => b - a) ?? []
  const seams = p.seamBytesPerToken
  const perToken = p.longContextCacheBytes / p.longContextTokens
  return [
    p.ranges === null
      ? `  hosts         a host of ${gb} usable holds no block`
      : `  hosts         ${p.ranges.length} per route at ${gb} usable, ` +
        `${Math.min(...lengths)}–${Math.max(...lengths)} blocks each`,
    `  seams         ${[...new Set([formatBytes(seams.min), formatBytes(seams.max)])].join('–')} per token across ` +
      `a cut (f16)`,
    `  cache at ${Math.round(p.longContextTokens / 1024)}K ${formatBytes(perToken)} per token, ` +
      `${formatBytes(p.longContextCacheBytes)} for one session`,
  ]
}

/** One line per group of blocks with equal cache: "blocks 0–47: 96.0 KiB/token (KV)". */
export function formatCache(caches: readonly BlockCache[]): string[] {
  return cacheGroups(caches).map(({ blocks, cache }) => {
    const what =
      cache.kind === 'kv'
        ? cache.bytesPerToken === 0 && cache.fixedBytes
          ? 'no per-token cache: recurrent state'
          : 'KV'
        : cache.kind === 'latent'
          ? 'latent, keys only'
          : `sliding window: at most ${cache.windowTokens} tokens per session`
    const recent = cache.recent
      ? `, + ${formatBytes(cache.recent.bytesPerToken)}/token of the last ${cache.recent.windowTokens}`
      : ''
    const fixed = `${recent}${cache.fixedBytes ? `, + ${formatBytes(cache.fixedBytes)} per session` : ''}`
    return (
      `${blocks.length === 1 ? 'block' : 'blocks'} ${formatBlockList(blocks)}: ` +
      `${formatBytes(cache.bytesPerToken)}/token (${what})${fixed}`
    )
  })
}

/** Ascending block numbers as "0–47", "0, 2, …, 34" or "3, 7–9". */
function formatBlockList(blocks: readonly number[]): string {
  const first = blocks[0] ?? 0
  const last = blocks.at(-1) ?? first
  const step = (blocks[1] ?? first + 1) - first
  const even = blocks.every((b, i) => b === first + i * step)
  if (even && step === 1) return first === last ? `${first}` : `${first}–${last}`
  if (even && blocks.length > 3) return `${first}, ${first + step}, …, ${last}`
  const runs: string[] = []
  for (let i = 0; i < blocks.length; ) {
    let j = i
    while (j + 1 < blocks.length && blocks[j + 1] === (blocks[j] as number) + 1) j++
    runs.push(i === j ? `${blocks[i]}` : `${blocks[i]}–${blocks[j]}`)
    i = j + 1
  }
  return runs.join(', ')
}
