import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { type ManifestArtifact, NeuronError } from '../../protocol'

/**
 * Throws unless the file's size and sha256 are the manifest's. `streamedSha256`, when given, is the
 * digest of the bytes as they were stored (see StreamedSha256); without it the file is read back.
 */
export async function verifyArtifact(
  path: string,
  artifact: ManifestArtifact,
  streamedSha256?: string,
  log?: (line: string) => void,
): Promise<void> {
  const size = (await stat(path).catch(() => undefined))?.size
  if (size !== artifact.bytes) {
    throw new NeuronError(
      'artifact_corrupt',
      `artifact ${artifact.file} is ${size ?? 'missing'}${size === undefined ? '' : ' bytes'}, expected ` +
        `${artifact.bytes} bytes.`,
      { file: artifact.file },
    )
  }
  if (streamedSha256 === undefined) log?.(`${artifact.file}: checking its sha256 on disk`)
  const got = streamedSha256 ?? (await sha256Of(path))
  if (got !== artifact.sha256) {
    throw new NeuronError(
      'artifact_corrupt',
      `artifact ${artifact.file} failed sha256 (expected ${artifact.sha256.slice(0, 12)}…, got ` +
        `${got.slice(0, 12)}…); re-downloading.`,
      {
        file: artifact.file,
        expected: artifact.sha256,
        got,
      },
    )
  }
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path, { highWaterMark: 4 << 20 })) hash.update(chunk as Buffer)
  return hash.digest('hex')
}
