import { join } from 'node:path'
import type { Manifest } from '../protocol'

/**
 * The artifact files a runtime for blocks [from, to) needs: block artifacts overlapping the range,
 * the embed artifact for the first hop (and for a head with tied embeddings), the head artifact last.
 */
export function artifactsFor(manifest: Manifest, dir: string, range: { layers: [number, number]; embed: boolean; head: boolean }): string[] {
  const [from, to] = range.layers
  const needEmbed = range.embed || (range.head && manifest.tiedEmbeddings)
  return manifest.artifacts
    .filter((a) => {
      if (a.role === 'embed') return needEmbed
      if (a.role === 'head') return range.head
      return a.blocks !== null && a.blocks[0] < to && a.blocks[1] > from
    })
    .map((a) => join(dir, a.file))
}
