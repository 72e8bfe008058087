import { open } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { type GgufKv, GgufValueType, readGguf } from '../gguf/reader'
import { serializeHeader } from '../gguf/writer'

/**
 * Splits a GGUF file into `count` parts the way llama.cpp's gguf-split does (`<stem>-00001-of-0000N.gguf`): the first
 * part holds all metadata, every part `split.no`, `split.count` and `split.tensors.count`, and the tensors in order.
 * Returns the parts' paths.
 */
export async function splitGguf(source: string, dir: string, count: number): Promise<string[]> {
  const file = await readGguf(source)
  const stem = basename(source).replace(/\.gguf$/i, '')
  const per = Math.ceil(file.tensors.length / count)
  const input = await open(source, 'r')
  const paths: string[] = []
  try {
    for (let i = 0; i < count; i++) {
      const tensors = file.tensors.slice(i * per, (i + 1) * per)
      const split: GgufKv[] = [
        { key: 'split.no', type: GgufValueType.UINT16, value: i },
        { key: 'split.count', type: GgufValueType.UINT16, value: count },
        { key: 'split.tensors.count', type: GgufValueType.INT32, value: file.tensors.length },
      ]
      const header = serializeHeader(i === 0 ? [...file.kvs, ...split] : split, tensors, file.alignment)
      const path = join(dir, `${stem}-${String(i + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`)
      const out = await open(path, 'wx')
      try {
        await out.write(header.bytes, 0, header.bytes.length, 0)
        for (const [j, t] of tensors.entries()) {
          const data = Buffer.alloc(t.bytes)
          await input.read(data, 0, t.bytes, t.offset)
          await out.write(data, 0, t.bytes, header.bytes.length + (header.dataOffsets[j] ?? 0))
        }
      } finally {
        await out.close()
      }
      paths.push(path)
    }
  } finally {
    await input.close()
  }
  return paths
}
