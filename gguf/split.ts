import { basename, dirname, join } from 'node:path'
import { GgufError } from './errors'
import { type GgufFile, type GgufTensor, kvValue, readGguf } from './reader'

/** llama.cpp's gguf-split names its parts `<stem>-00001-of-00003.gguf`. */
const PART_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i

/** A model in one GGUF file or split over several: one header to pack from, and which part holds each tensor. */
export interface GgufModelFiles {
  /** The first part's metadata (the others hold only split.* keys) and every part's tensors. */
  readonly file: GgufFile
  /** Paths of the parts in order (one for an unsplit file). */
  readonly parts: readonly string[]
  /** Index into `parts` of the file a tensor's `offset` is in. */
  readonly partOf: ReadonlyMap<GgufTensor, number>
  /** The model's name without `.gguf` and without the split suffix. */
  readonly stem: string
}

/**
 * The files a model is read from, by name alone: the parts a first part `<stem>-00001-of-0000N.gguf` names, else the
 * file itself (readGgufModel checks the parts' headers; this reads none, for a caller that only needs their sizes).
 */
export function splitParts(path: string): string[] {
  const name = PART_NAME.exec(basename(path))
  if (name === null || Number(name[2]) !== 1) return [path]
  return Array.from({ length: Number(name[3]) }, (_, i) =>
    join(dirname(path), `${name[1]}-${String(i + 1).padStart(5, '0')}-of-${name[3]}.gguf`),
  )
}

/**
 * Reads a model from its GGUF file, or from the first part of a split model (as llama.cpp loads one): the other parts
 * are found beside it by name; each must say it is part i of the same count, holding the tensors the first states.
 */
export async function readGgufModel(path: string): Promise<GgufModelFiles> {
  const first = await readGguf(path)
  const count = Number(kvValue(first, 'split.count') ?? 1)
  const name = PART_NAME.exec(basename(path))
  const stem = (name?.[1] ?? basename(path).replace(/\.gguf$/i, '')) || 'model'
  if (count <= 1) return { file: first, parts: [path], partOf: new Map(first.tensors.map((t) => [t, 0])), stem }
  const no = Number(kvValue(first, 'split.no') ?? 0)
  if (name === null || no !== 0 || Number(name[2]) !== 1 || Number(name[3]) !== count || count > 1000) {
    throw new GgufError(
      'bad_model',
      `${path} is part ${no + 1} of ${count} of a split model; pass its first part, <name>-00001-of-` +
        `${String(count).padStart(5, '0')}.gguf, with the other parts beside it`,
      { path },
    )
  }
  const parts = splitParts(path)
  const partOf = new Map<GgufTensor, number>(first.tensors.map((t) => [t, 0]))
  const tensors: GgufTensor[] = [...first.tensors]
  for (const [i, part] of parts.entries()) {
    if (i === 0) continue
    const file = await readGguf(part).catch((error: unknown) => {
      if (error instanceof GgufError && error.code === 'not_found') {
        throw new GgufError(
          'not_found',
          `${part} is missing: a split model needs all ${count} parts beside the first`,
          {
            path: part,
          },
        )
      }
      throw error
    })
    if (Number(kvValue(file, 'split.no')) !== i || Number(kvValue(file, 'split.count')) !== count) {
      throw new GgufError('bad_model', `${part} is not part ${i + 1} of ${count} of ${basename(path)}'s model`, {
        path: part,
      })
    }
    for (const t of file.tensors) partOf.set(t, i)
    tensors.push(...file.tensors)
  }
  const stated = Number(kvValue(first, 'split.tensors.count') ?? tensors.length)
  if (stated !== tensors.length || new Set(tensors.map((t) => t.name)).size !== tensors.length) {
    throw new GgufError(
      'bad_model',
      `${path}'s parts hold ${tensors.length} tensors (some twice?), but it states ${stated}; download the parts again`,
      { path },
    )
  }
  const kvs = first.kvs.filter((kv) => !kv.key.startsWith('split.'))
  return { file: { ...first, kvs, tensors }, parts, partOf, stem }
}
