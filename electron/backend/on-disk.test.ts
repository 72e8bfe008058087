import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type HostingPreview, Manifest } from '../../protocol'
import { OLD_MANIFEST } from '../../test/manifests'
import { filesOnDisk, withBytesOnDisk } from './on-disk'

const manifest = Manifest.parse(OLD_MANIFEST)
const option = {
  blocks: [0, 3] as [number, number],
  bytesToDownload: 3 * 16384,
  memoryBytes: 1,
  expectedTokensPerSecond: 1,
  swarmTokensPerSecond: 1,
  bestRouteMsPerToken: null,
}
const preview: HostingPreview = {
  placement: {
    modelId: manifest.modelId,
    proposal: option,
    refusal: null,
    swarmTokensPerSecond: 0,
    coverage: [],
    alternatives: [],
  },
  creditsPerHourMicro: null,
}
let dir = ''
afterEach(() => rm(dir, { recursive: true, force: true }))

describe('the files a preview finds on disk', () => {
  it('counts a range’s whole files already in the data directory, and not a partial one', async () => {
    dir = await mkdtemp(join(tmpdir(), 'on-disk-'))
    const models = join(dir, 'models', manifest.modelId)
    await mkdir(models, { recursive: true })
    await writeFile(join(models, 'embed.gguf'), Buffer.alloc(16384))
    await writeFile(join(models, 'blocks-0-3.gguf'), Buffer.alloc(16384))
    await writeFile(join(models, 'head.gguf'), Buffer.alloc(100)) // still downloading
    const here = await filesOnDisk(dir, manifest)
    expect([...here].sort()).toEqual(['blocks-0-3.gguf', 'embed.gguf'])
    expect(withBytesOnDisk(preview, manifest, here).bytesOnDisk).toEqual([{ blocks: [0, 3], bytes: 2 * 16384 }])
  })
})
