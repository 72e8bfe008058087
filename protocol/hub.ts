import { z } from 'zod'

/**
 * What the Hugging Face Hub's JSON API answers, as far as Neuron reads it. Every answer is a network input: sizes are
 * bounded and unknown fields ignored, so a mirror (HF_ENDPOINT) that adds fields still parses.
 */

/** `owner/name`, as the Hub spells repository ids: letters, digits, `-`, `_`, `.`; no `..`, no leading dot. */
export const HubRepoId = z
  .string()
  .max(96)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a repository id is owner/name')
  .refine((id) => !id.includes('..'), 'a repository id has no ".."')
export type HubRepoId = z.infer<typeof HubRepoId>

/** A path inside a repository: relative, `/`-separated, no `..` segment (it becomes a path on this disk). */
export const HubFilePath = z
  .string()
  .min(1)
  .max(512)
  .refine(
    (p) => p.split('/').every((s) => s !== '' && s !== '.' && s !== '..' && !s.includes('\\')) && !p.includes('\0'),
    'a repository file path is relative, with no empty, "." or ".." part',
  )

/** `false`, or how access is granted ("auto", "manual"): a gated repository needs a token that accepted its terms. */
const Gated = z.union([z.boolean(), z.string().max(32)]).optional()

export const HubSearchHit = z.object({
  id: HubRepoId,
  downloads: z.number().int().nonnegative().optional(),
  likes: z.number().int().nonnegative().optional(),
  gated: Gated,
  private: z.boolean().optional(),
  lastModified: z.string().max(64).optional(),
  tags: z.array(z.string().max(200)).max(500).optional(),
})
export type HubSearchHit = z.infer<typeof HubSearchHit>
export const HubSearchAnswer = z.array(HubSearchHit).max(1000)

export const HubModelInfo = z.object({
  id: HubRepoId,
  /** The commit the answer describes: files are fetched at it, so a resumed download gets the same bytes. */
  sha: z
    .string()
    .regex(/^[0-9a-f]{40}$/)
    .optional(),
  gated: Gated,
  private: z.boolean().optional(),
})
export type HubModelInfo = z.infer<typeof HubModelInfo>

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 is 64 lowercase hex digits')
/** Sizes fit a double exactly (a GGUF file is far smaller than 2^53 bytes). */
const ByteCount = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)

export const HubTreeEntry = z.object({
  type: z.enum(['file', 'directory']),
  path: HubFilePath,
  size: ByteCount.optional(),
  /** Large files are stored by LFS (or Xet) and carry their sha256 here: what a download is checked against. */
  lfs: z.object({ oid: Sha256Hex, size: ByteCount }).optional(),
})
export type HubTreeEntry = z.infer<typeof HubTreeEntry>
export const HubTreePage = z.array(HubTreeEntry).max(10_000)

/** One file of a GGUF model on the Hub, as a download checks it. */
export const HubGgufFile = z.object({ path: HubFilePath, bytes: ByteCount, sha256: Sha256Hex })
export type HubGgufFile = z.infer<typeof HubGgufFile>

/** A model a repository offers: one GGUF file, or the parts of a split one (`-00001-of-0000N`) in order. */
export const HubGgufModel = z.object({
  /** The file's name without `.gguf` and without the split suffix. */
  name: z.string().max(512),
  /** The quantization the name states (`Q4_K_M`, `IQ4_XS`, `BF16`…), upper-case; null when it states none. */
  quant: z.string().max(32).nullable(),
  files: z.array(HubGgufFile).min(1).max(256),
  bytes: ByteCount,
  /** A vision projector (`mmproj`), which serves no text on its own. */
  projector: z.boolean(),
})
export type HubGgufModel = z.infer<typeof HubGgufModel>
