// Seeded hostile inputs for the fuzz test: a PRNG that replays from its seed, values chosen to break
// a parser (wrong types, binary, sizes at and past the protocol's limits, deep nesting, prototype
// keys), and mutations of valid payloads and data-plane frames.
import {
  FRAME_HEADER_BYTES,
  MAX_BLOCKS,
  MAX_LABEL_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_MODEL_ID_CHARS,
  MAX_NONCE_CHARS,
  MAX_PATH_CHARS,
  MAX_SESSION_TOKENS,
  MAX_URL_CHARS,
} from '../protocol'

export type Rng = () => number

/** mulberry32: small, and the same sequence for the same seed on every machine. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const below = (rng: Rng, n: number): number => Math.floor(rng() * n)
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[below(rng, xs.length)] as T

export function randomBuffer(rng: Rng, n: number): Buffer {
  const out = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) out[i] = below(rng, 256)
  return out
}

/** String lengths at and just past each protocol limit, and far past them (a 1 MiB one now and then). */
const LENGTHS = [
  0,
  1,
  16,
  20,
  32,
  43,
  64,
  86,
  MAX_NONCE_CHARS + 1,
  MAX_MODEL_ID_CHARS + 1,
  MAX_LABEL_CHARS,
  MAX_LABEL_CHARS + 1,
  MAX_URL_CHARS + 1,
  MAX_PATH_CHARS + 1,
  MAX_MESSAGE_CHARS + 1,
  65_536,
]
const NUMBERS = [
  0,
  -0,
  -1,
  1,
  0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  2 ** 31,
  2 ** 32,
  2 ** 53 + 2,
  -(2 ** 53),
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  MAX_SESSION_TOKENS + 1,
  MAX_BLOCKS + 1,
]
/** Keys that reach for an object's prototype, or look like its methods. */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'then',
  '',
]
const ALPHABET = [
  'a',
  'f',
  '0',
  '9',
  'Z',
  '-',
  '_',
  '.',
  '/',
  ' ',
  '\u0000',
  'é',
  '\u{1F600}',
  '\ud800',
  '"',
  '\\',
  '%',
]

export function text(rng: Rng, length: number): string {
  // Long strings repeat a short random run: random enough for a parser, cheap to make.
  const run = Array.from({ length: Math.min(length, 64) }, () => pick(rng, ALPHABET)).join('')
  return run.length === 0 ? '' : run.repeat(Math.ceil(length / run.length)).slice(0, length)
}

/** `[[[…]]]` or `{"a":{"a":…}}` nested `depth` deep. */
function nested(rng: Rng, depth: number): unknown {
  let v: unknown = pick(rng, [0, 'x', null, Buffer.from('xx')])
  const arrays = rng() < 0.5
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v }
  return v
}

/** An object whose own keys include `__proto__`, `constructor`…, as JSON.parse makes them. */
function prototypeKeys(rng: Rng): unknown {
  const key = pick(rng, PROTOTYPE_KEYS)
  return JSON.parse(`{${JSON.stringify(key)}: {"polluted": true, "prototype": {"polluted": true}}, "x": 1}`)
}

/** A value chosen to break a parser: wrong types, binary, sizes past the limits, deep nesting, prototype keys. */
export function hostileValue(rng: Rng, depth = 0): unknown {
  switch (below(rng, 12)) {
    case 0:
      return pick(rng, [null, undefined, true, false, {}, []])
    case 1:
      return pick(rng, NUMBERS)
    case 2:
      return text(rng, rng() < 0.05 ? 1 << 20 : pick(rng, LENGTHS))
    case 3:
      return randomBuffer(rng, pick(rng, [0, 1, 2, 16, 48, 4096, 65_536]))
    case 4:
      return pick(rng, [new Uint8Array([1, 2]), new Float64Array([1, 2]), new Uint16Array(3)])
    case 5:
      return nested(rng, pick(rng, [8, 100, 1000, 2000]))
    case 6:
      return prototypeKeys(rng)
    case 7:
      // Past the longest array a request may carry (4096 receipts or blocks).
      return Array.from({ length: pick(rng, [2, 100, 1100, 5000]) }, (_, i) =>
        depth < 1 && i === 0 ? hostileValue(rng, depth + 1) : i,
      )
    case 8:
      return Object.fromEntries(Array.from({ length: pick(rng, [10, 300, 3000]) }, (_, i) => [`k${i}`, i]))
    case 9:
      return depth < 2 ? [hostileValue(rng, depth + 1), hostileValue(rng, depth + 1)] : 'x'
    case 10:
      // Hex and base64url of nearly the right lengths: ids, keys and signatures that almost parse.
      return text(rng, pick(rng, [19, 20, 21, 31, 32, 33, 40, 42, 43, 44, 64, 85, 86, 87])).replace(/[^0-9a-f]/g, 'a')
    default:
      return Buffer.from('xx')
  }
}

/** A deep copy of plain data and bytes. */
export function copy(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value)
  if (ArrayBuffer.isView(value)) return value
  if (Array.isArray(value)) return value.map(copy)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)]))
  return value
}

type Slot = [Record<string | number, unknown>, string | number]

/** Every place in `holder.value` a mutation can hit, the whole value included. */
function slots(holder: { value: unknown }): Slot[] {
  const out: Slot[] = [[holder as Record<string, unknown>, 'value']]
  const walk = (v: unknown, depth: number) => {
    if (depth > 8 || ArrayBuffer.isView(v) || v === null || typeof v !== 'object') return
    const container = v as Record<string | number, unknown>
    for (const key of Array.isArray(v) ? v.keys() : Object.keys(v)) {
      out.push([container, key])
      walk(container[key], depth + 1)
    }
  }
  walk(holder.value, 0)
  return out
}

/** A value of another type carrying the same content: 5 ↔ "5", [a, b] ↔ {0: a, 1: b}, bytes → numbers. */
function retyped(v: unknown): unknown {
  if (typeof v === 'number') return String(v)
  if (typeof v === 'string') return Number(v) || v.length
  if (ArrayBuffer.isView(v)) return [...new Uint8Array(v.buffer, v.byteOffset, Math.min(v.byteLength, 64))]
  if (Array.isArray(v)) return Object.fromEntries(v.entries())
  if (v !== null && typeof v === 'object') return Object.values(v)
  return [v]
}

/** A valid payload with one to three fields removed, replaced, retyped, or given prototype-reaching siblings. */
export function mutate(rng: Rng, payload: unknown): unknown {
  const holder = { value: copy(payload) }
  const n = 1 + below(rng, 3)
  for (let i = 0; i < n; i++) {
    const [parent, key] = pick(rng, slots(holder))
    switch (below(rng, 6)) {
      case 0:
        if (parent !== holder) delete parent[key]
        break
      case 1:
        parent[key] = retyped(parent[key])
        break
      case 2: {
        const v = parent[key]
        // A sibling key, possibly `__proto__` as an own key (a computed key is not the prototype setter).
        if (v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
          parent[key] = { ...v, [pick(rng, [...PROTOTYPE_KEYS, 'extra'])]: hostileValue(rng) }
        } else parent[key] = hostileValue(rng)
        break
      }
      default:
        parent[key] = hostileValue(rng)
    }
  }
  return holder.value
}

/** Header offsets of the data plane's fields, with the width of each (bytes). */
const HEADER_FIELDS: readonly [offset: number, bytes: 1 | 2 | 4][] = [
  [0, 4],
  [4, 1],
  [5, 1],
  [6, 2],
  [8, 4],
  [24, 4],
  [28, 4],
  [32, 4],
  [36, 4],
  [40, 4],
  [44, 4],
]
const FIELD_VALUES = [0, 1, 2, 7, 8, 255, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 4096, 64, FRAME_HEADER_BYTES]

/** A frame with its header fields, bytes or length broken in one of the ways a hostile peer could. */
export function mutateFrame(rng: Rng, frame: Uint8Array): Buffer {
  // At least a header's worth, so every field can be written (a twice-mutated frame may be shorter).
  const out = Buffer.concat([frame, Buffer.alloc(Math.max(0, FRAME_HEADER_BYTES - frame.byteLength))])
  switch (below(rng, 6)) {
    case 0:
    case 1: {
      const [offset, bytes] = pick(rng, HEADER_FIELDS)
      const value = pick(rng, FIELD_VALUES) >>> 0
      if (bytes === 1) out.writeUInt8(value & 0xff, offset)
      else if (bytes === 2) out.writeUInt16LE(value & 0xffff, offset)
      else out.writeUInt32LE(value, offset)
      return out
    }
    case 2:
      for (let i = 1 + below(rng, 8); i > 0; i--) out[below(rng, out.length)] = below(rng, 256)
      return out
    case 3:
      return out.subarray(0, below(rng, out.length))
    case 4:
      return Buffer.concat([out, randomBuffer(rng, 1 + below(rng, 256))])
    default: {
      // A consistent header around a payload of another size: tokens × width still matches the bytes.
      const payload = randomBuffer(rng, 4 * pick(rng, [0, 1, 3, 64, 1024]))
      const head = Buffer.from(out.subarray(0, FRAME_HEADER_BYTES))
      head.writeUInt32LE(payload.length / 4, 32)
      head.writeUInt32LE(1, 36)
      head.writeUInt32LE(payload.length, 40)
      head.writeUInt32LE(0, 44)
      return Buffer.concat([head, payload])
    }
  }
}

/** An audit request for the hop that signed `receipt`, its input and answer all zeros (so not what it signed). */
export function auditOf(session: string, receipt: { hostId: string; blocks: [number, number]; tokens: number }) {
  const bytes = receipt.tokens * 128
  const steps = [{ receipt, dtype: 'f16', tokens: receipt.tokens, width: 64, bytes }]
  return {
    session,
    hostId: receipt.hostId,
    blocks: receipt.blocks,
    steps,
    payloads: Buffer.alloc(bytes),
    output: Buffer.alloc(128),
  }
}
