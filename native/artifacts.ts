import { join } from 'node:path'
import { artifactsForBlocks, type Manifest } from '../protocol'

/** Paths in `dir` of the artifact files a runtime for blocks [from, to) needs. */
export function artifactsFor(manifest: Manifest, dir: string, layers: readonly [number, number]): string[] {
  return artifactsForBlocks(manifest, layers).map((a) => join(dir, a.file))
}
