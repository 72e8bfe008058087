import { z } from 'zod'
import { BlockCache } from './cache-cost'
import {
  MAX_ARTIFACTS,
  MAX_BLOCKS,
  MAX_LABEL_CHARS,
  MAX_MODEL_ID_CHARS,
  MAX_PATH_CHARS,
  MAX_TENSORS_PER_ARTIFACT,
} from './limits'
import { Seam } from './seams'

/** What one artifact file holds: the token embedding, a range of blocks, or the output head. */
export const ArtifactRole = z.enum(['embed', 'blocks', 'head'])
export type ArtifactRole = z.infer<typeof ArtifactRole>

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 is 64 lowercase hex digits')
export const Count = z.number().int().nonnegative()
export const ModelId = z
  .string()
  .max(MAX_MODEL_ID_CHARS)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'a model id is lowercase letters, digits, . _ -')

export const ManifestArtifact = z
  .object({
    /** File name inside the model's directory (and its torrent). */
    file: z
      .string()
      .max(MAX_LABEL_CHARS)
      .regex(/^[A-Za-z0-9._-]+\.gguf$/, 'an artifact file is a plain name ending in .gguf'),
    role: ArtifactRole,
    /** Half-open block range [begin, end) for `blocks`; null for `embed` and `head`. */
    blocks: z.tuple([Count, Count]).nullable(),
    bytes: Count,
    sha256: Sha256,
    tensors: z.array(z.string().max(MAX_LABEL_CHARS)).min(1).max(MAX_TENSORS_PER_ARTIFACT),
  })
  .refine((a) => (a.role === 'blocks') === (a.blocks !== null), {
    message: 'blocks artifacts carry a block range; embed and head artifacts carry none',
  })
  .refine((a) => a.blocks === null || a.blocks[0] < a.blocks[1], {
    message: 'a block range [begin, end) must have begin < end',
  })
export type ManifestArtifact = z.infer<typeof ManifestArtifact>

export const MANIFEST_FORMAT = 'neuron-manifest/1'

export const Manifest = z
  .object({
    format: z.literal(MANIFEST_FORMAT),
    modelId: ModelId,
    name: z.string().max(MAX_LABEL_CHARS),
    architecture: z.string().min(1).max(MAX_LABEL_CHARS),
    nLayer: z.number().int().positive().max(MAX_BLOCKS),
    nEmbd: z.number().int().positive(),
    nVocab: z.number().int().positive(),
    contextLength: Count,
    /** Bytes of each block's tensors, index = block. */
    bytesPerBlock: z.array(Count).max(MAX_BLOCKS),
    /**
     * KV-cache bytes one token costs in one block, at f16 keys and values. Since `cachePerBlock`, the largest
     * of its `bytesPerToken`, so readers that know only this figure never under-count a block's per-token cost.
     */
    kvBytesPerTokenPerBlock: Count,
    /**
     * Each block's cache (index = block); absent in manifests
     * packed before it, which mean plain KV of the figure above.
     */
    cachePerBlock: z.array(BlockCache).max(MAX_BLOCKS).optional(),
    /**
     * Boundaries 1..nLayer − 1 (index = boundary − 1): whether a route may cut there and what crosses it
     * (protocol/seams.ts); absent in manifests packed before it, which allow every cut with nEmbd values crossing.
     */
    seams: z.array(Seam).max(MAX_BLOCKS).optional(),
    /** How hidden states cross seams by default (`seamDtype` in protocol/seams.ts); absent means f16. */
    seamDtype: z.enum(['f16', 'f32']).optional(),
    /** True when the model has no output.weight and the head reuses the token embedding. */
    tiedEmbeddings: z.boolean(),
    alignment: z.number().int().positive(),
    /** Torrent piece size; every artifact's size is a multiple of it, so pieces never span two files. */
    pieceBytes: z
      .number()
      .int()
      .refine((n) => n >= 16384 && (n & (n - 1)) === 0, 'pieceBytes is a power of two of at least 16 KiB'),
    source: z.object({ file: z.string().max(MAX_PATH_CHARS), bytes: Count, sha256: Sha256 }),
    /**
     * sha256 of the model's tokenizer GGUF (metadata only: vocabulary, chat template), as
     * `tokenizerGguf` writes it. Absent only in manifests packed before it was recorded.
     */
    tokenizerSha256: Sha256.optional(),
    artifacts: z.array(ManifestArtifact).min(1).max(MAX_ARTIFACTS),
  })
  .superRefine((m, ctx) => {
    for (const a of m.artifacts) {
      if (a.bytes % m.pieceBytes !== 0)
        ctx.addIssue({
          code: 'custom',
          message: `${a.file} is ${a.bytes} bytes, not a multiple of pieceBytes ${m.pieceBytes}`,
        })
    }
    if (m.bytesPerBlock.length !== m.nLayer) {
      ctx.addIssue({
        code: 'custom',
        message: `bytesPerBlock has ${m.bytesPerBlock.length} entries for ${m.nLayer} blocks`,
      })
    }
    if (m.cachePerBlock !== undefined && m.cachePerBlock.length !== m.nLayer) {
      ctx.addIssue({
        code: 'custom',
        message: `cachePerBlock has ${m.cachePerBlock.length} entries for ${m.nLayer} blocks`,
      })
    }
    if (m.seams !== undefined && m.seams.length !== m.nLayer - 1) {
      ctx.addIssue({
        code: 'custom',
        message: `seams has ${m.seams.length} entries for the ${m.nLayer - 1} boundaries between ${m.nLayer} blocks`,
      })
    }
    // Blocks artifacts must tile [0, nLayer) exactly, in order.
    let next = 0
    for (const a of m.artifacts) {
      if (a.blocks === null) continue
      if (a.blocks[0] !== next) {
        ctx.addIssue({
          code: 'custom',
          message: `block artifacts leave a gap or overlap at block ${next} (${a.file} starts at ${a.blocks[0]})`,
        })
        return
      }
      next = a.blocks[1]
    }
    if (next !== m.nLayer)
      ctx.addIssue({ code: 'custom', message: `block artifacts cover [0, ${next}) of ${m.nLayer} blocks` })
    for (const role of ['embed', 'head'] as const) {
      const n = m.artifacts.filter((a) => a.role === role).length
      if (n !== 1)
        ctx.addIssue({ code: 'custom', message: `a manifest has exactly one ${role} artifact, this one has ${n}` })
    }
  })
export type Manifest = z.infer<typeof Manifest>

/**
 * The artifacts blocks [a, b) need: the embed artifact when a = 0, every blocks artifact overlapping
 * the range (fetched whole), and the head artifact when b is the last block (for a tied model it
 * carries the token embedding, so the head needs no embed artifact).
 */
export function artifactsForBlocks(
  manifest: Pick<Manifest, 'artifacts' | 'nLayer'>,
  blocks: readonly [number, number],
): ManifestArtifact[] {
  const [a, b] = blocks
  return manifest.artifacts.filter((x) => {
    if (x.role === 'embed') return a === 0
    if (x.role === 'head') return b === manifest.nLayer
    return x.blocks !== null && x.blocks[0] < b && x.blocks[1] > a
  })
}
