import { rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { STORIES_260K, scratchDir } from '../test/models'
import { splitGguf } from '../test/split-gguf'
import { packModel } from './pack'
import { readGgufModel } from './split'

let dir = ''
let cleanup = async () => {}
let parts: string[] = []

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-split-'))
  parts = await splitGguf(STORIES_260K, dir, 3)
})
afterAll(() => cleanup())

describe('a model split by gguf-split (…-00001-of-00003.gguf)', () => {
  it('packs from its first part to the unsplit file’s artifacts, named without the split suffix', async () => {
    const whole = await packModel({ source: STORIES_260K, out: join(dir, 'whole') })
    const split = await packModel({ source: parts[0] as string, out: join(dir, 'split') })
    expect(split.modelId).toBe('stories260k')
    expect(split.artifacts.map((a) => a.sha256)).toEqual(whole.artifacts.map((a) => a.sha256))
    const sizes = await Promise.all(parts.map(async (p) => (await stat(p)).size))
    expect(split.source.bytes).toBe(sizes.reduce((s, b) => s + b, 0))
  })

  it('refuses a later part, saying to pass the first; and a missing part, naming it', async () => {
    await expect(readGgufModel(parts[1] as string)).rejects.toThrow(/is part 2 of 3 .* pass its first part/)
    await rm(parts[2] as string)
    await expect(readGgufModel(parts[0] as string)).rejects.toThrow(/stories260K-00003-of-00003\.gguf is missing/)
  })
})
