import { createHash } from 'node:crypto'
import { access, mkdir, open, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { GGUFValueType } from '@huggingface/gguf'
import { MANIFEST_FORMAT, Manifest, type ManifestArtifact, NeuronError } from '../protocol'
import { alignUp } from './ggml-types'
import { describeModel, type ModelLayout } from './model'
import type { GgufFile, GgufKv, GgufTensor } from './reader'
import { sha256File } from './source-hash'
import { type GgufModelFiles, readGgufModel } from './split'
import { tokenizerGgufOf } from './tokenizer'
import { serializeHeader } from './writer'

export interface PackOptions {
  /** A GGUF file, or the first part of a split one (`…-00001-of-0000N.gguf`, the other parts beside it). */
  readonly source: string
  /** Directory to create; it must not exist. */
  readonly out: string
  /** Blocks per artifact file (default 1), or… */
  readonly blocksPerArtifact?: number
  /** …as many whole blocks as fit in this many bytes (at least one). */
  readonly maxArtifactBytes?: number
  readonly modelId?: string
  readonly onProgress?: (copiedBytes: number, totalBytes: number) => void
}

interface ArtifactPlan {
  readonly file: string
  readonly role: ManifestArtifact['role']
  readonly blocks: [number, number] | null
  readonly tensors: readonly GgufTensor[]
}

/** Bytes copied per read; bounds the packer's memory whatever the model's size. */
const CHUNK = 8 << 20

/**
 * Cuts a GGUF model into artifacts (embed, block ranges, head), each a valid GGUF with the full
 * metadata, plus manifest.json. Deterministic: the same input and options give the same bytes.
 * Writes into a temporary sibling directory and renames it into place, so a failure leaves nothing.
 */
export async function packModel(options: PackOptions): Promise<Manifest> {
  const { source, out } = options
  if (await exists(out)) {
    throw new NeuronError('output_exists', `${out} already exists; choose a new --out directory or remove it first.`, {
      out,
    })
  }
  if (
    options.blocksPerArtifact !== undefined &&
    !(Number.isInteger(options.blocksPerArtifact) && options.blocksPerArtifact > 0)
  ) {
    throw new NeuronError(
      'bad_option',
      `--blocks-per-artifact must be a whole number above 0, not ${options.blocksPerArtifact}.`,
    )
  }
  if (
    options.maxArtifactBytes !== undefined &&
    !(Number.isInteger(options.maxArtifactBytes) && options.maxArtifactBytes > 0)
  ) {
    throw new NeuronError(
      'bad_option',
      `--max-artifact-bytes must be a whole number above 0, not ${options.maxArtifactBytes}.`,
    )
  }
  const files = await readGgufModel(source)
  const { file } = files
  const model = describeModel(file)
  const plans = planArtifacts(model, options)
  const pieceBytes = torrentPieceBytes(model.tensorBytes)
  const modelId = options.modelId ?? slug(files.stem)

  const staging = join(dirname(out), `.${basename(out)}.partial-${process.pid}`)
  await rm(staging, { recursive: true, force: true })
  await mkdir(staging, { recursive: true })
  try {
    const sourceHash = sha256File(files.parts)
    const total = plans.reduce((sum, p) => sum + p.tensors.reduce((s, t) => s + t.bytes, 0), 0)
    let copied = 0
    const buffers = [Buffer.allocUnsafe(CHUNK), Buffer.allocUnsafe(CHUNK)] as const
    const artifacts: ManifestArtifact[] = []
    const handles = await Promise.all(files.parts.map((p) => open(p, 'r')))
    try {
      for (const plan of plans) {
        const written = await writeArtifact(
          join(staging, plan.file),
          file,
          plan,
          model.hparams.nLayer,
          { files, handles },
          buffers,
          pieceBytes,
          (n) => {
            copied += n
            options.onProgress?.(copied, total)
          },
        )
        artifacts.push({
          file: plan.file,
          role: plan.role,
          blocks: plan.blocks,
          bytes: written.bytes,
          sha256: written.sha256,
          tensors: plan.tensors.map((t) => t.name),
        })
      }
    } finally {
      await Promise.all(handles.map((h) => h.close()))
    }
    const { sha256, bytes } = await sourceHash
    const manifest = Manifest.parse({
      format: MANIFEST_FORMAT,
      modelId,
      name: model.name,
      architecture: model.architecture,
      nLayer: model.hparams.nLayer,
      nEmbd: model.hparams.nEmbd,
      nVocab: model.hparams.nVocab,
      contextLength: model.hparams.contextLength,
      bytesPerBlock: [...model.bytesPerBlock],
      kvBytesPerTokenPerBlock: model.kvBytesPerTokenPerBlock,
      cachePerBlock: [...model.cachePerBlock],
      // Stated only where some boundary differs from a plain one (a forbidden cut, streams, token ids, indices): older
      // readers see the same manifest.
      ...(model.seams.some((x) => !x.cut || x.values !== model.hparams.nEmbd || x.tokenIds || x.int32PerToken > 0)
        ? { seams: [...model.seams] }
        : {}),
      ...(model.experts > 0 ? { seamDtype: 'f32' as const } : {}),
      tiedEmbeddings: model.tiedEmbeddings,
      alignment: file.alignment,
      pieceBytes,
      // A split model's bytes and sha256 are its parts' one after the other.
      source: { file: basename(source), bytes, sha256 },
      tokenizerSha256: createHash('sha256').update(tokenizerGgufOf(file)).digest('hex'),
      artifacts,
    } satisfies Manifest)
    await writeFile(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
    await rename(staging, out)
    return manifest
  } catch (error) {
    await rm(staging, { recursive: true, force: true })
    throw error
  }
}

function planArtifacts(model: ModelLayout, options: PackOptions): ArtifactPlan[] {
  const n = model.hparams.nLayer
  const width = String(n).length
  const pad = (i: number) => String(i).padStart(width, '0')
  const ranges: [number, number][] = []
  let begin = 0
  while (begin < n) {
    let end = begin + 1
    if (options.maxArtifactBytes !== undefined) {
      let size = model.bytesPerBlock[begin] ?? 0
      while (end < n && size + (model.bytesPerBlock[end] ?? 0) <= options.maxArtifactBytes)
        size += model.bytesPerBlock[end++] ?? 0
    } else {
      end = Math.min(n, begin + (options.blocksPerArtifact ?? 1))
    }
    ranges.push([begin, end])
    begin = end
  }
  const tokenEmbd = model.embed.filter((t) => t.name === 'token_embd.weight')
  return [
    { file: 'embed.gguf', role: 'embed', blocks: null, tensors: model.embed },
    ...ranges.map(
      ([a, b]): ArtifactPlan => ({
        file: `blocks-${pad(a)}-${pad(b)}.gguf`,
        role: 'blocks',
        blocks: [a, b],
        // Tensors outside any block (rope_freqs.weight, …) are needed by every block, so every range carries them.
        tensors: [...model.shared, ...model.blocks.slice(a, b).flat()],
      }),
    ),
    // A tied-embedding model computes logits with token_embd.weight, so its head carries a copy.
    {
      file: 'head.gguf',
      role: 'head',
      blocks: null,
      tensors: model.tiedEmbeddings ? [...model.head, ...tokenEmbd] : model.head,
    },
  ]
}

async function writeArtifact(
  path: string,
  file: GgufFile,
  plan: ArtifactPlan,
  nLayer: number,
  source: { readonly files: GgufModelFiles; readonly handles: readonly Awaited<ReturnType<typeof open>>[] },
  buffers: readonly [Buffer, Buffer],
  pieceBytes: number,
  progress: (bytes: number) => void,
): Promise<{ bytes: number; sha256: string }> {
  const kvs: GgufKv[] = [
    ...file.kvs,
    { key: 'neuron.format', type: GGUFValueType.UINT32, value: 1 },
    { key: 'neuron.role', type: GGUFValueType.STRING, value: plan.role },
    { key: 'neuron.block_begin', type: GGUFValueType.UINT32, value: plan.blocks?.[0] ?? 0 },
    { key: 'neuron.block_end', type: GGUFValueType.UINT32, value: plan.blocks?.[1] ?? 0 },
    { key: 'neuron.block_count', type: GGUFValueType.UINT32, value: nLayer },
  ]
  const header = serializeHeader(kvs, plan.tensors, file.alignment)
  // The artifact as a list of pieces: header, then each tensor's source range after its padding.
  const pieces: Piece[] = [{ bytes: header.bytes }]
  let length = header.bytes.length
  for (const [i, tensor] of plan.tensors.entries()) {
    const start = header.bytes.length + (header.dataOffsets[i] ?? 0)
    if (start > length) pieces.push({ bytes: Buffer.alloc(start - length) })
    for (let done = 0; done < tensor.bytes; done += CHUNK) {
      pieces.push({
        part: source.files.partOf.get(tensor) ?? 0,
        sourceOffset: tensor.offset + done,
        length: Math.min(CHUNK, tensor.bytes - done),
        tensor: tensor.name,
      })
    }
    length = start + tensor.bytes
  }
  // Zeros after the last tensor (GGUF readers ignore them) end the file on a torrent piece
  // boundary, so no piece spans two artifacts and a host fetches only its own files.
  const padded = alignUp(length, pieceBytes)
  if (padded > length) pieces.push({ bytes: Buffer.alloc(padded - length) })

  const hash = createHash('sha256')
  const out = await open(path, 'wx')
  const read = async (piece: Piece, into: Buffer): Promise<Buffer> => {
    if ('bytes' in piece) return piece.bytes
    const handle = source.handles[piece.part]
    const { bytesRead } = (await handle?.read(into, 0, piece.length, piece.sourceOffset)) ?? { bytesRead: 0 }
    if (bytesRead !== piece.length)
      throw new NeuronError(
        'truncated',
        `${source.files.parts[piece.part]} ended while copying tensor ${piece.tensor}; was it changed during packing?`,
      )
    return into.subarray(0, bytesRead)
  }
  try {
    // Two buffers: the next piece is read while this one is hashed and written.
    let written = 0
    let next = pieces[0] === undefined ? undefined : read(pieces[0], buffers[0])
    for (let i = 0; next !== undefined; i++) {
      const chunk = await next
      const following = pieces[i + 1]
      next = following === undefined ? undefined : read(following, buffers[(i + 1) % 2] as Buffer)
      hash.update(chunk)
      await out.write(chunk, 0, chunk.length, written)
      written += chunk.length
      if ('sourceOffset' in (pieces[i] as Piece)) progress(chunk.length)
    }
    return { bytes: written, sha256: hash.digest('hex') }
  } finally {
    await out.close()
  }
}

type Piece =
  | { readonly bytes: Buffer }
  | { readonly part: number; readonly sourceOffset: number; readonly length: number; readonly tensor: string }

/**
 * BitTorrent piece size for a model: a power of two from 16 KiB to 4 MiB aiming at about 2000
 * pieces, so the torrent stays small and padding each artifact to a piece boundary costs little.
 */
export function torrentPieceBytes(modelBytes: number): number {
  const target = modelBytes / 2000
  let piece = 16 * 1024
  while (piece < target && piece < 4 * 1024 * 1024) piece *= 2
  return piece
}

function slug(s: string): string {
  const cleaned = s
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
  return cleaned || 'model'
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path)
    return true
  } catch {
    return false
  }
}
