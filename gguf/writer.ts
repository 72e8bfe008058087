import { GGUFValueType } from '@huggingface/gguf'
import type { GgmlType } from './ggml-types'
import { alignUp } from './ggml-types'
import type { GgufKv } from './reader'

/** A tensor as the writer lays it out: its data comes later, at `dataOffsets[i]` past the header. */
export interface TensorLayout {
  readonly name: string
  readonly type: GgmlType
  readonly shape: readonly number[]
  readonly bytes: number
}

export interface GgufHeader {
  /** Magic, version, counts, metadata, tensor table, padded to the alignment. */
  readonly bytes: Buffer
  /** Each tensor's offset relative to the start of the data section (= bytes.length). */
  readonly dataOffsets: readonly number[]
  /** Size of the whole file once every tensor and its padding is written. */
  readonly fileBytes: number
}

/** Serializes a GGUF v3 header. Tensors are placed in the given order, each aligned. */
export function serializeHeader(
  kvs: readonly GgufKv[],
  tensors: readonly TensorLayout[],
  alignment: number,
): GgufHeader {
  const out = new ByteSink()
  out.raw(Buffer.from('GGUF', 'latin1'))
  out.u32(3)
  out.u64(BigInt(tensors.length))
  out.u64(BigInt(kvs.length))
  for (const kv of kvs) {
    out.string(kv.key)
    out.u32(kv.type)
    writeValue(out, kv.type, kv.value, kv.subType, kv.key)
  }
  const dataOffsets: number[] = []
  let cursor = 0
  for (const t of tensors) {
    out.string(t.name)
    out.u32(t.shape.length)
    for (const d of t.shape) out.u64(BigInt(d))
    out.u32(t.type.id)
    out.u64(BigInt(cursor))
    dataOffsets.push(cursor)
    cursor = alignUp(cursor + t.bytes, alignment)
  }
  const unpadded = out.length
  out.raw(Buffer.alloc(alignUp(unpadded, alignment) - unpadded))
  const bytes = out.toBuffer()
  const last = tensors.at(-1)
  const dataBytes = last === undefined ? 0 : (dataOffsets.at(-1) ?? 0) + last.bytes
  return { bytes, dataOffsets, fileBytes: bytes.length + dataBytes }
}

/** Fixed-size GGUF value types: byte width and how to write one. */
const SCALARS: Partial<Record<GGUFValueType, readonly [number, (b: Buffer, v: unknown) => void]>> = {
  [GGUFValueType.UINT8]: [1, (b, v) => b.writeUInt8(Number(v))],
  [GGUFValueType.INT8]: [1, (b, v) => b.writeInt8(Number(v))],
  [GGUFValueType.UINT16]: [2, (b, v) => b.writeUInt16LE(Number(v))],
  [GGUFValueType.INT16]: [2, (b, v) => b.writeInt16LE(Number(v))],
  [GGUFValueType.UINT32]: [4, (b, v) => b.writeUInt32LE(Number(v))],
  [GGUFValueType.INT32]: [4, (b, v) => b.writeInt32LE(Number(v))],
  [GGUFValueType.FLOAT32]: [4, (b, v) => b.writeFloatLE(Number(v))],
  [GGUFValueType.BOOL]: [1, (b, v) => b.writeUInt8(v ? 1 : 0)],
  [GGUFValueType.UINT64]: [8, (b, v) => b.writeBigUInt64LE(BigInt(v as bigint | number))],
  [GGUFValueType.INT64]: [8, (b, v) => b.writeBigInt64LE(BigInt(v as bigint | number))],
  [GGUFValueType.FLOAT64]: [8, (b, v) => b.writeDoubleLE(Number(v))],
}

function writeValue(
  out: ByteSink,
  type: GGUFValueType,
  value: unknown,
  subType: GGUFValueType | undefined,
  key: string,
): void {
  const scalar = SCALARS[type]
  if (scalar !== undefined) {
    const [width, write] = scalar
    out.scalar(width, (b) => write(b, value))
  } else if (type === GGUFValueType.STRING) {
    out.string(String(value))
  } else if (type === GGUFValueType.ARRAY) {
    if (!Array.isArray(value) || subType === undefined)
      throw new Error(`metadata ${key}: an ARRAY needs an element type and array value`)
    out.u32(subType)
    out.u64(BigInt(value.length))
    for (const item of value) {
      // GGUF does not record the element type of inner arrays, so they cannot be rewritten faithfully.
      if (Array.isArray(item)) throw new Error(`metadata ${key}: arrays of arrays are not supported`)
      writeValue(out, subType, item, undefined, key)
    }
  } else {
    throw new Error(`metadata ${key}: unknown GGUF value type ${type}`)
  }
}

/** A growable little-endian byte buffer. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16)
  length = 0

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n))
    this.buf.copy(next, 0, 0, this.length)
    this.buf = next
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length)
    this.buf.set(bytes, this.length)
    this.length += bytes.length
  }

  scalar(n: number, write: (b: Buffer) => void): void {
    this.reserve(n)
    write(this.buf.subarray(this.length, this.length + n))
    this.length += n
  }

  u32(v: number): void {
    this.scalar(4, (b) => b.writeUInt32LE(v))
  }

  u64(v: bigint): void {
    this.scalar(8, (b) => b.writeBigUInt64LE(v))
  }

  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8')
    this.u64(BigInt(bytes.length))
    this.raw(bytes)
  }

  toBuffer(): Buffer {
    return this.buf.subarray(0, this.length)
  }
}
