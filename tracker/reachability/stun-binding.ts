// STUN Binding (RFC 8489, which obsoletes RFC 5389) on the wire: which datagrams are Binding Requests this tracker
// answers, and the Binding Success Response that tells the sender its address as the tracker sees it
// (XOR-MAPPED-ADDRESS). Pure functions over bytes: stun-server.ts owns the socket and the rate bound.
import { isIPv4, isIPv6 } from 'node:net'

export const STUN_HEADER_BYTES = 20
export const STUN_MAGIC_COOKIE = 0x2112a442
/**
 * The largest request answered: RFC 8489 §6.1 sizes STUN over UDP for a 576-byte path (548 bytes of message); a
 * Binding Request to a server carries at most a few short attributes, so anything larger is not one.
 */
export const MAX_STUN_REQUEST_BYTES = 548

const BINDING_REQUEST = 0x0001
const BINDING_SUCCESS = 0x0101
const XOR_MAPPED_ADDRESS = 0x0020
const FINGERPRINT = 0x8028
const FINGERPRINT_XOR = 0x5354554e
/**
 * Comprehension-required attributes (type below 0x8000) a Binding Request may carry that this server, which has no
 * credentials, may ignore and still answer: credentials (RFC 8489 §9: a server without authentication processes the
 * request as if they were absent) and ICE's check attributes (RFC 8445 §16.1). Any other one (CHANGE-REQUEST from
 * RFC 5780, say) asks for a service this server does not give, so the request is not answered.
 */
const IGNORABLE_REQUIRED = new Set([
  0x0006, // USERNAME
  0x0008, // MESSAGE-INTEGRITY
  0x0014, // REALM
  0x0015, // NONCE
  0x001c, // MESSAGE-INTEGRITY-SHA256
  0x001e, // USERHASH
  0x0024, // PRIORITY
  0x0025, // USE-CANDIDATE
])

/** What the server needs of a request it answers. */
export interface BindingRequest {
  /** The 96-bit transaction id, echoed in the response (and the key of an IPv6 address's XOR). */
  readonly transactionId: Buffer
  /** The request carried a valid FINGERPRINT: the response carries one too (RFC 8489 §14.7's usage rule). */
  readonly fingerprint: boolean
}

/**
 * The datagram as a Binding Request, or undefined when it is not exactly one: shorter than a header or longer than
 * MAX_STUN_REQUEST_BYTES, another message type (an indication, a response, another method, non-STUN bytes), no
 * magic cookie (RFC 3489's older requests included), a length field that disagrees with the datagram or is not a
 * multiple of 4, attributes that overrun the message, a FINGERPRINT that is wrong or not last, or a
 * comprehension-required attribute this server does not know. Never throws.
 */
export function parseBindingRequest(datagram: Buffer): BindingRequest | undefined {
  if (datagram.byteLength < STUN_HEADER_BYTES || datagram.byteLength > MAX_STUN_REQUEST_BYTES) return undefined
  // the type's two top bits are zero for STUN, so 0x0001 checks them too
  if (datagram.readUInt16BE(0) !== BINDING_REQUEST) return undefined
  const length = datagram.readUInt16BE(2)
  if (length % 4 !== 0 || STUN_HEADER_BYTES + length !== datagram.byteLength) return undefined
  if (datagram.readUInt32BE(4) !== STUN_MAGIC_COOKIE) return undefined
  let fingerprint = false
  for (let at = STUN_HEADER_BYTES; at < datagram.byteLength; ) {
    if (fingerprint) return undefined // FINGERPRINT must be the last attribute
    if (at + 4 > datagram.byteLength) return undefined
    const type = datagram.readUInt16BE(at)
    const valueBytes = datagram.readUInt16BE(at + 2)
    const next = at + 4 + Math.ceil(valueBytes / 4) * 4
    if (next > datagram.byteLength) return undefined
    if (type === FINGERPRINT) {
      if (valueBytes !== 4) return undefined
      const expected = (crc32(datagram.subarray(0, at)) ^ FINGERPRINT_XOR) >>> 0
      if (datagram.readUInt32BE(at + 4) !== expected) return undefined
      fingerprint = true
    } else if (type < 0x8000 && !IGNORABLE_REQUIRED.has(type)) return undefined
    at = next
  }
  return { transactionId: Buffer.from(datagram.subarray(8, STUN_HEADER_BYTES)), fingerprint }
}

/**
 * The Binding Success Response to `request` from `address`:`port` (as the socket saw it): the header with the
 * request's transaction id, XOR-MAPPED-ADDRESS (family IPv4 for an IPv4 sender, also one seen through a dual-stack
 * socket as ::ffff:a.b.c.d; IPv6 otherwise), and FINGERPRINT when the request had one. 32, 40, 44 or 52 bytes.
 * Undefined when `address` is not an IP address (nothing the socket reports).
 */
export function bindingSuccess(request: BindingRequest, address: string, port: number): Buffer | undefined {
  const ip = ipBytes(address)
  if (ip === undefined) return undefined
  const valueBytes = 4 + ip.byteLength
  const attributesBytes = 4 + valueBytes + (request.fingerprint ? 8 : 0)
  const out = Buffer.alloc(STUN_HEADER_BYTES + attributesBytes)
  out.writeUInt16BE(BINDING_SUCCESS, 0)
  out.writeUInt16BE(attributesBytes, 2)
  out.writeUInt32BE(STUN_MAGIC_COOKIE, 4)
  request.transactionId.copy(out, 8)
  let at = STUN_HEADER_BYTES
  out.writeUInt16BE(XOR_MAPPED_ADDRESS, at)
  out.writeUInt16BE(valueBytes, at + 2)
  out.writeUInt8(ip.byteLength === 4 ? 0x01 : 0x02, at + 5)
  out.writeUInt16BE((port ^ (STUN_MAGIC_COOKIE >>> 16)) & 0xffff, at + 6)
  // X-Address: the address XOR the magic cookie, then (IPv6) the transaction id (RFC 8489 §14.2)
  const key = out.subarray(4, STUN_HEADER_BYTES)
  for (let i = 0; i < ip.byteLength; i++) out[at + 8 + i] = (ip[i] as number) ^ (key[i] as number)
  at += 4 + valueBytes
  if (request.fingerprint) {
    out.writeUInt16BE(FINGERPRINT, at)
    out.writeUInt16BE(4, at + 2)
    out.writeUInt32BE((crc32(out.subarray(0, at)) ^ FINGERPRINT_XOR) >>> 0, at + 4)
  }
  return out
}

/** An IP address's bytes: 4 for IPv4 (and IPv4-mapped IPv6), 16 for IPv6 (a zone index dropped); else undefined. */
export function ipBytes(address: string): Buffer | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  const v4 = mapped ?? address
  if (isIPv4(v4)) return Buffer.from(v4.split('.').map(Number))
  const bare = address.split('%')[0] ?? ''
  if (!isIPv6(bare)) return undefined
  // a dotted IPv4 tail (::1.2.3.4, 64:ff9b::1.2.3.4) as its two hextets
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  const [a = 0, b = 0, c = 0, d = 0] = dotted?.[2]?.split('.').map(Number) ?? []
  const hex = dotted ? `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}` : bare
  const [head = '', tail] = hex.split('::')
  const part = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(':'))
  const left = part(head)
  const right = part(tail)
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  if (groups.length !== 8) return undefined
  const out = Buffer.alloc(16)
  for (const [i, g] of groups.entries()) out.writeUInt16BE(Number.parseInt(g, 16), i * 2)
  return out
}

/** CRC-32 (ISO-HDLC, zlib's), which FINGERPRINT uses; zlib.crc32 needs Node 20.15 and the engines allow 20.10. */
function crc32(bytes: Buffer): number {
  let crc = 0xffffffff
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
