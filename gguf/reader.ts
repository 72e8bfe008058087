import { open, stat } from 'node:fs/promises'
import { type GGUFTypedMetadata, GGUFValueType, gguf } from '@huggingface/gguf'
import { GgufError } from './errors'
import { type GgmlType, ggmlType, tensorBytes } from './ggml-types'

export { GGUFValueType as GgufValueType }

/** One metadata key with its exact GGUF type, so a writer can reproduce it bit for bit. */
export interface GgufKv {
  readonly key: string
  readonly type: GGUFValueType
  /** Element type when `type` is ARRAY. */
  readonly subType?: GGUFValueType
  readonly value: unknown
}

export interface GgufTensor {
  readonly name: string
  readonly type: GgmlType
  /** ggml order: shape[0] is the contiguous dimension (ne0). */
  readonly shape: readonly number[]
  /** Absolute byte offset of the tensor's data in the file. */
  readonly offset: number
  readonly bytes: number
}

export interface GgufFile {
  readonly path: string
  readonly fileBytes: number
  readonly version: number
  readonly alignment: number
  readonly kvs: readonly GgufKv[]
  readonly tensors: readonly GgufTensor[]
  readonly dataOffset: number
}

const MAGIC = Buffer.from('GGUF', 'latin1')
/** llama.cpp reads GGUF v2 and v3; v1 files predate 64-bit counts and are not read. */
const SUPPORTED_VERSIONS = [2, 3]
const DEFAULT_ALIGNMENT = 32

/**
 * Reads a GGUF file's header (metadata and tensor table) and checks it against the file:
 * every tensor's type is known, its data lies inside the file and is aligned.
 */
export async function readGguf(path: string): Promise<GgufFile> {
  const fileBytes = await statSize(path)
  const head = await readPrefix(path, 8)
  if (head.length < 4 || !head.subarray(0, 4).equals(MAGIC)) {
    const seen = head.subarray(0, 4).toString('hex').replace(/(..)/g, '$1 ').trim() || 'nothing (empty file)'
    throw new GgufError(
      'not_gguf',
      `${path} is not a GGUF file: it starts with ${seen}, not "GGUF". Pass a .gguf model file.`,
      { path },
    )
  }
  if (head.length < 8) {
    throw new GgufError(
      'truncated',
      `${path} is truncated: ${fileBytes} bytes, too short for a GGUF header. Download it again.`,
      { path, fileBytes },
    )
  }
  const version = head.readUInt32LE(4)
  if (!SUPPORTED_VERSIONS.includes(version)) {
    const hint = (version & 0xffff) === 0 ? ' (it looks big-endian; Neuron reads little-endian GGUF)' : ''
    throw new GgufError(
      'unsupported_version',
      `${path} is GGUF version ${version}${hint}; Neuron reads versions ${SUPPORTED_VERSIONS.join(' and ')}. ` +
        `Convert it again with a current llama.cpp.`,
      { path, version },
    )
  }

  let parsed: Awaited<ReturnType<typeof parseWithLibrary>>
  try {
    parsed = await parseWithLibrary(path)
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause)
    const truncated = cause instanceof RangeError || /out of bounds|outside the bounds|offset/i.test(why)
    throw new GgufError(
      truncated ? 'truncated' : 'corrupt',
      truncated
        ? `${path} is truncated: its header ends early (${fileBytes} bytes in the file). Download it again.`
        : `${path} has a corrupt GGUF header: ${why}. Download or convert it again.`,
      { path, fileBytes },
    )
  }

  const kvs: GgufKv[] = []
  for (const [key, entry] of Object.entries(parsed.typedMetadata)) {
    if (key === 'version' || key === 'tensor_count' || key === 'kv_count') continue
    const subType = 'subType' in entry ? entry.subType : undefined
    kvs.push({ key, type: entry.type, ...(subType === undefined ? {} : { subType }), value: entry.value })
  }
  const alignmentKv = kvs.find((kv) => kv.key === 'general.alignment')
  const alignment = alignmentKv === undefined ? DEFAULT_ALIGNMENT : Number(alignmentKv.value)
  const dataOffset = Number(parsed.tensorDataOffset)

  const tensors: GgufTensor[] = parsed.tensorInfos.map((info) => {
    const type = ggmlType(info.dtype)
    if (type === undefined) {
      throw new GgufError(
        'unsupported_type',
        `${path}: tensor ${info.name} has ggml type ${info.dtype}, which Neuron does not know. Use a file ` +
          `quantized with a current llama.cpp type.`,
        {
          path,
          tensor: info.name,
          type: info.dtype,
        },
      )
    }
    const shape = info.shape.map(Number)
    const bytes = tensorBytes(type, shape)
    if (bytes === undefined) {
      throw new GgufError(
        'corrupt',
        `${path}: tensor ${info.name} is ${type.name} with a row of ${shape[0]} elements, not a multiple of its ` +
          `block size ${type.blockSize}.`,
        {
          path,
          tensor: info.name,
        },
      )
    }
    const relative = Number(info.offset)
    if (relative % alignment !== 0) {
      throw new GgufError(
        'corrupt',
        `${path}: tensor ${info.name} starts at data offset ${relative}, not aligned to ${alignment}.`,
        {
          path,
          tensor: info.name,
        },
      )
    }
    const offset = dataOffset + relative
    if (offset + bytes > fileBytes) {
      throw new GgufError(
        'truncated',
        `${path} is truncated: tensor ${info.name} needs bytes [${offset}, ${offset + bytes}) but the file ends at ` +
          `${fileBytes}. Download it again.`,
        { path, tensor: info.name, needed: offset + bytes, fileBytes },
      )
    }
    return { name: info.name, type, shape, offset, bytes }
  })

  return { path, fileBytes, version, alignment, kvs, tensors, dataOffset }
}

async function parseWithLibrary(path: string): Promise<{
  typedMetadata: GGUFTypedMetadata
  tensorInfos: { name: string; dtype: number; shape: bigint[]; offset: bigint }[]
  tensorDataOffset: bigint
}> {
  return gguf(path, { allowLocalFile: true, typedMetadata: true })
}

async function statSize(path: string): Promise<number> {
  try {
    const s = await stat(path)
    if (!s.isFile())
      throw new GgufError('not_found', `${path} is not a file. Pass the path of a .gguf model.`, { path })
    return s.size
  } catch (cause) {
    if (cause instanceof GgufError) throw cause
    throw new GgufError('not_found', `${path} does not exist or cannot be read. Check the path.`, { path })
  }
}

async function readPrefix(path: string, n: number): Promise<Buffer> {
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(n)
    const { bytesRead } = await fh.read(buf, 0, n, 0)
    return buf.subarray(0, bytesRead)
  } finally {
    await fh.close()
  }
}

/** The value of a metadata key, or undefined. */
export function kvValue(file: GgufFile, key: string): unknown {
  return file.kvs.find((kv) => kv.key === key)?.value
}
