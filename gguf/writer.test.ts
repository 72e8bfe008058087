import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { STORIES_260K } from '../test/models'
import { readGguf } from './reader'
import { serializeHeader } from './writer'

describe(`GGUF header writer`, () => {
  it('rewrites stories260K’s metadata and tensor table to the very bytes llama.cpp wrote', async () => {
    const file = await readGguf(STORIES_260K)
    const header = serializeHeader(file.kvs, file.tensors, file.alignment)
    const original = (await readFile(STORIES_260K)).subarray(0, file.dataOffset)
    expect(header.bytes.length).toBe(file.dataOffset)
    expect(header.bytes.equals(original)).toBe(true)
    expect(header.fileBytes).toBe(file.fileBytes)
  })
})
