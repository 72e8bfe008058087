import type { HubGgufFile, HubGgufModel, HubTreeEntry } from '../../protocol'

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i
const QUANT = /(?:^|[-._])(I?Q\d+(?:_[0-9A-Z]+)*|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|F32)(?=$|[-._])/gi

/** A repository's files that cannot be offered as models, and why (a split with parts missing, a file not in LFS). */
export interface SkippedGguf {
  readonly path: string
  readonly why: string
}

/**
 * A repository's GGUF files as models a person picks from: split parts joined into one model (every part present),
 * each with its quantization and size, in the repository's order. Files without an LFS sha256 cannot be checked after
 * download and are skipped with the reason.
 */
export function ggufModels(entries: readonly HubTreeEntry[]): { models: HubGgufModel[]; skipped: SkippedGguf[] } {
  const skipped: SkippedGguf[] = []
  const singles: HubGgufModel[] = []
  const splits = new Map<string, { count: number; parts: Map<number, HubGgufFile> }>()
  for (const entry of entries) {
    if (entry.type !== 'file' || !entry.path.toLowerCase().endsWith('.gguf')) continue
    if (entry.lfs === undefined) {
      skipped.push({ path: entry.path, why: 'not stored by LFS, so the Hub gives no sha256 to check it against' })
      continue
    }
    const file: HubGgufFile = { path: entry.path, bytes: entry.lfs.size, sha256: entry.lfs.oid }
    const split = SPLIT.exec(entry.path)
    if (split === null) {
      singles.push(model(entry.path.replace(/\.gguf$/i, ''), [file]))
      continue
    }
    const [, stem = '', no = '0', count = '0'] = split
    const key = `${stem}\0${count}`
    const group = splits.get(key) ?? { count: Number(count), parts: new Map() }
    group.parts.set(Number(no), file)
    splits.set(key, group)
  }
  const joined: HubGgufModel[] = []
  for (const [key, group] of splits) {
    const stem = key.split('\0')[0] ?? ''
    const parts = Array.from({ length: group.count }, (_, i) => group.parts.get(i + 1))
    const missing = parts.flatMap((p, i) => (p === undefined ? [i + 1] : []))
    if (group.count < 1 || missing.length > 0 || group.parts.size !== group.count) {
      skipped.push({
        path: `${stem}-*-of-${String(group.count).padStart(5, '0')}.gguf`,
        why: `parts ${missing.join(', ')} are missing`,
      })
      continue
    }
    joined.push(model(stem, parts as HubGgufFile[]))
  }
  return { models: [...singles, ...joined].sort((a, b) => a.name.localeCompare(b.name)), skipped }
}

function model(stem: string, files: HubGgufFile[]): HubGgufModel {
  const name = stem.split('/').pop() ?? stem
  const quants = [...name.matchAll(QUANT)]
  const quant = quants.at(-1)?.[1]?.toUpperCase() ?? null
  return {
    name,
    quant,
    files,
    bytes: files.reduce((s, f) => s + f.bytes, 0),
    projector: /mmproj/i.test(name),
  }
}

/** The quantization `llama.cpp -hf` picks when none is asked for. */
export const DEFAULT_QUANT = 'Q4_K_M'

/**
 * The model `repo[:quant]` names: the one of that quantization (or of `Q4_K_M`, else the first, when none is asked);
 * undefined when none matches. Vision projectors are never picked by quantization.
 */
export function pickModel(models: readonly HubGgufModel[], quant?: string): HubGgufModel | undefined {
  const text = models.filter((m) => !m.projector)
  if (quant !== undefined) return text.find((m) => m.quant === quant.toUpperCase())
  return text.find((m) => m.quant === DEFAULT_QUANT) ?? text[0]
}
