import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { artifactsForBlocks, type BlockRange, type HostingPreview, type Manifest } from '../../protocol'

/** Where the artifact store keeps a model's files (host/artifacts/artifact-store.ts `pathOf`). */
function artifactPath(dataDir: string, modelId: string, file: string): string {
  return join(dataDir, 'models', modelId, file)
}

/** The model's files already whole on disk (the size the manifest states; the store checks the hash before loading). */
export async function filesOnDisk(dataDir: string, manifest: Manifest): Promise<Set<string>> {
  const whole = await Promise.all(
    manifest.artifacts.map(async (a) => {
      const info = await stat(artifactPath(dataDir, manifest.modelId, a.file)).catch(() => undefined)
      return info?.isFile() === true && info.size === a.bytes ? a.file : null
    }),
  )
  return new Set(whole.filter((f): f is string => f !== null))
}

/** Bytes of each offered range's files already on disk: the proposal's and every alternative's. */
export function withBytesOnDisk(
  preview: HostingPreview,
  manifest: Manifest,
  onDisk: ReadonlySet<string>,
): HostingPreview {
  const { proposal, alternatives } = preview.placement
  const ranges: BlockRange[] = [...(proposal === null ? [] : [proposal.blocks]), ...alternatives.map((a) => a.blocks)]
  const bytesOnDisk = ranges.map((blocks) => ({
    blocks,
    bytes: artifactsForBlocks(manifest, blocks)
      .filter((a) => onDisk.has(a.file))
      .reduce((s, a) => s + a.bytes, 0),
  }))
  return { ...preview, bytesOnDisk }
}
