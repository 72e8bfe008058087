import { readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { packModel } from '../gguf/pack'
import { splitParts } from '../gguf/split'
import { type Manifest, NeuronError } from '../protocol'
import { readManifest } from './publish'

/**
 * The pack directory of a GGUF model under `publishedDir` (one block per artifact): an earlier pack of the same source
 * file and size, or a fresh one named by its model id. A split model is packed from its first part.
 */
export async function packOnce(publishedDir: string, source: string, log: (line: string) => void): Promise<string> {
  // By name, not by header: every start publishes the app's models again, and a reused pack needs only the sizes.
  // A missing part matches no pack; packing it then says which part is missing.
  const sizes = await Promise.all(
    splitParts(source).map((p) =>
      stat(p).then(
        (s) => s.size,
        () => Number.NaN,
      ),
    ),
  )
  const size = sizes.reduce((s, b) => s + b, 0)
  for (const [dir, manifest] of await existingPacks(publishedDir)) {
    if (manifest.source.file === basename(source) && manifest.source.bytes === size) return dir
  }
  const staging = join(publishedDir, `.packing-${process.pid}-${Date.now()}`)
  const manifest = await packModel({ source, out: staging, blocksPerArtifact: 1 })
  const target = join(publishedDir, manifest.modelId)
  const clash = await readManifest(target).catch(() => undefined)
  if (clash !== undefined) {
    await rm(staging, { recursive: true, force: true })
    if (clash.source.sha256 === manifest.source.sha256) return target
    throw new NeuronError(
      'model_exists',
      `another model named ${manifest.modelId} is already published from ${target} (source ` +
        `${clash.source.file}); rename ${basename(source)} and add it again`,
    )
  }
  await rename(staging, target)
  log(`packed ${source} into ${target}: ${manifest.artifacts.length} artifacts`)
  return target
}

async function existingPacks(publishedDir: string): Promise<[string, Manifest][]> {
  const names = await readdir(publishedDir).catch(() => [] as string[])
  const out: [string, Manifest][] = []
  for (const name of names.filter((n) => !n.startsWith('.'))) {
    const dir = join(publishedDir, name)
    const manifest = await readManifest(dir).catch(() => undefined)
    if (manifest !== undefined) out.push([dir, manifest])
  }
  return out
}
