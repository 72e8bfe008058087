import { join } from 'node:path'
import { artifactsForBlocks, type Manifest } from '../protocol'

/** Paths in `dir` of the artifact files a runtime for blocks [from, to) needs. */
export function artifactsFor(manifest: Manifest, dir: string, blocks: readonly [number, number]): string[] {
  return artifactsForBlocks(manifest, blocks).map((a) => join(dir, a.file))
}
