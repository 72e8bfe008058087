import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import type { Manifest, ManifestArtifact } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Sha256Workers } from './sha256-workers'
import { StreamedSha256 } from './streamed-sha256'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
const workers = new Sha256Workers()

/** The torrent's pieces of one artifact, as [index, bytes], in order. */
async function piecesOf(a: ManifestArtifact): Promise<[number, Uint8Array][]> {
  const bytes = await readFile(join(dir, 'packed', a.file))
  let first = 0
  for (const x of manifest.artifacts) {
    if (x === a) break
    first += x.bytes / manifest.pieceBytes
  }
  return Array.from({ length: a.bytes / manifest.pieceBytes }, (_, i) => [
    first + i,
    bytes.subarray(i * manifest.pieceBytes, (i + 1) * manifest.pieceBytes),
  ])
}

function blocksArtifact(): ManifestArtifact {
  const a = manifest.artifacts.find((x) => x.role === 'blocks' && x.bytes / manifest.pieceBytes >= 4)
  if (a === undefined) throw new Error('the pack has no blocks artifact of 4 pieces or more')
  return a
}

describe(`the sha256 of an artifact from its pieces as they are stored`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
  })
  afterAll(async () => {
    await workers.close()
    await cleanup()
  })

  it('is the manifest’s sha256 when the pieces come out of order, and only the wanted files are hashed', async () => {
    const a = blocksArtifact()
    const other = manifest.artifacts.find((x) => x !== a) as ManifestArtifact
    const streamed = new StreamedSha256(manifest, [a], workers)
    const pieces = await piecesOf(a)
    // Each pair swapped, the last piece first, one piece twice: as two peers deliver.
    const order = [
      pieces.at(-1),
      ...pieces.slice(0, -1).flatMap((_, i, all) => (i % 2 === 0 ? [all[i + 1], all[i]] : [])),
      pieces[0],
    ]
    for (const p of order) if (p !== undefined) streamed.add(...p)
    for (const p of pieces) streamed.add(...p)
    expect(await streamed.digestOf(a.file)).toBe(a.sha256)
    for (const p of await piecesOf(other)) streamed.add(...p)
    expect(await streamed.digestOf(other.file)).toBeUndefined()
  })

  it(
    'takes pieces that are whole buffers without copying them (they move to the worker) and still gives the ' +
      'manifest’s sha256',
    async () => {
      const a = blocksArtifact()
      const streamed = new StreamedSha256(manifest, [a], workers)
      const owned = (await piecesOf(a)).map(([i, p]) => [i, Uint8Array.from(p)] as const)
      for (const [i, p] of owned) streamed.add(i, p)
      expect(owned.every(([, p]) => p.byteLength === 0)).toBe(true)
      expect(await streamed.digestOf(a.file)).toBe(a.sha256)
    },
  )

  it('is not the manifest’s sha256 when a stored byte differs', async () => {
    const a = blocksArtifact()
    const streamed = new StreamedSha256(manifest, [a], workers)
    const pieces = await piecesOf(a)
    const [index, bytes] = pieces[1] as [number, Uint8Array]
    const bad = Uint8Array.from(bytes)
    bad[100] = (bad[100] ?? 0) ^ 0xff
    for (const [i, p] of pieces) streamed.add(i, i === index ? bad : p)
    expect(await streamed.digestOf(a.file)).toMatch(/^[0-9a-f]{64}$/)
    expect(await streamed.digestOf(a.file)).not.toBe(a.sha256)
  })

  it('has no digest (so the file is read back) when pieces wait past its memory bound, or one never came', async () => {
    const a = blocksArtifact()
    const pieces = await piecesOf(a)
    const tight = new StreamedSha256(manifest, [a], workers, 2 * manifest.pieceBytes)
    for (const p of [...pieces].reverse()) tight.add(...p)
    expect(await tight.digestOf(a.file)).toBeUndefined()
    const resumed = new StreamedSha256(manifest, [a], workers)
    for (const p of pieces.slice(1)) resumed.add(...p)
    expect(await resumed.digestOf(a.file)).toBeUndefined()
  })
})
