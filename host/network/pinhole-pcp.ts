// PCP (RFC 6887) MAP for an IPv6 address: asks the home router's firewall to let the internet reach one TCP port of
// this computer (an IPv6 firewall "pinhole"; for v6 there is no NAT, so the external address is the computer's own).
// No maintained npm package speaks PCP or IGDv2 pinholes; the protocol is one 60-byte datagram each way. The router
// is a network input like any other: every answer is bounded, decoded field by field and parsed with zod.
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import { z } from 'zod'

export const PCP_PORT = 5351
/** RFC 6887 section 7: a PCP message is at most 1100 bytes. */
export const MAX_PCP_BYTES = 1100
const VERSION = 2
const OPCODE_MAP = 1
const TCP = 6
/** Header (24) plus the MAP opcode (36): the shortest MAP request or answer. */
const MAP_BYTES = 60

/** What one MAP asks for: `port` on `internal` (this computer's global v6 address) open for `lifetimeS` (0: close). */
export interface PinholeRequest {
  /** The router's address (its LAN v6 address or link-local `fe80::1%eth0`). */
  readonly router: string
  readonly routerPort?: number
  readonly internal: string
  readonly port: number
  readonly lifetimeS: number
  /** 12 bytes; the same nonce renews or closes the pinhole it opened. */
  readonly nonce: Buffer
  /** How long to wait for the router, all tries together (default 2 s). */
  readonly timeoutMs?: number
}

/** What the router granted: the endpoint the internet may reach, and for how long. */
export interface PinholeGrant {
  readonly externalAddress: string
  readonly externalPort: number
  readonly lifetimeS: number
  /** The router's epoch (seconds since its PCP state began): a smaller one than before means it restarted. */
  readonly epochS: number
}

export function pinholeNonce(): Buffer {
  return randomBytes(12)
}

/** RFC 6887 section 7.4 result codes, for errors a person can act on. */
const RESULTS: Readonly<Record<number, string>> = {
  1: 'UNSUPP_VERSION',
  2: 'NOT_AUTHORIZED (the router forbids pinholes for this computer)',
  3: 'MALFORMED_REQUEST',
  4: 'UNSUPP_OPCODE (the router does not do MAP)',
  5: 'UNSUPP_OPTION',
  6: 'MALFORMED_OPTION',
  7: 'NETWORK_FAILURE',
  8: 'NO_RESOURCES',
  9: 'UNSUPP_PROTOCOL',
  10: 'USER_EX_QUOTA',
  11: 'CANNOT_PROVIDE_EXTERNAL',
  12: 'ADDRESS_MISMATCH (a NAT between this computer and the router)',
  13: 'EXCESSIVE_REMOTE_PEERS',
}

/** A decoded MAP answer, checked against what was asked before anything in it is believed. */
const MapAnswer = z.object({
  version: z.literal(VERSION, { message: `the router answered another PCP version (this client speaks ${VERSION})` }),
  opcode: z.literal(0x80 | OPCODE_MAP, { message: 'the answer is not a MAP response' }),
  result: z.number().int().min(0).max(255),
  // a pinhole longer than a day is not one this host asked for (it asks for at most an hour)
  lifetimeS: z.number().int().min(0).max(86_400),
  epochS: z.number().int().min(0),
  nonce: z.string().length(24),
  protocol: z.literal(TCP, { message: 'the answer is for another protocol than TCP' }),
  internalPort: z.number().int().min(1).max(65_535),
  externalPort: z.number().int().min(0).max(65_535),
  externalAddress: z.string().refine(isIPv6, 'the external address is not an IPv6 address'),
})

/** The 60-byte MAP request (RFC 6887 sections 7.1 and 11.1). */
export function encodeMapRequest(r: Omit<PinholeRequest, 'router'>): Buffer {
  const out = Buffer.alloc(MAP_BYTES)
  out[0] = VERSION
  out[1] = OPCODE_MAP
  out.writeUInt32BE(r.lifetimeS, 4)
  ipv6Bytes(r.internal).copy(out, 8)
  r.nonce.copy(out, 24, 0, 12)
  out[36] = TCP
  out.writeUInt16BE(r.port, 40)
  out.writeUInt16BE(r.port, 42)
  ipv6Bytes(r.internal).copy(out, 44)
  return out
}

/**
 * The router's answer to `request`, or an error that says what was wrong: too long or short, not a MAP answer, another
 * nonce or port (an answer to someone else), a result code other than success, an external address that is no IPv6.
 */
export function decodeMapAnswer(answer: Buffer, request: Omit<PinholeRequest, 'router'>): PinholeGrant {
  if (answer.byteLength > MAX_PCP_BYTES)
    throw new Error(`the router's PCP answer is ${answer.byteLength} bytes; one is at most ${MAX_PCP_BYTES}`)
  if (answer.byteLength < MAP_BYTES || answer.byteLength % 4 !== 0)
    throw new Error(`the router's PCP answer is ${answer.byteLength} bytes; a MAP answer is 60 or more, in fours`)
  const parsed = MapAnswer.safeParse({
    version: answer[0],
    opcode: answer[1],
    result: answer[3],
    lifetimeS: answer.readUInt32BE(4),
    epochS: answer.readUInt32BE(8),
    nonce: answer.subarray(24, 36).toString('hex'),
    protocol: answer[36],
    internalPort: answer.readUInt16BE(40),
    externalPort: answer.readUInt16BE(42),
    externalAddress: ipv6Text(answer.subarray(44, 60)),
  })
  if (!parsed.success)
    throw new Error(`the router's PCP answer is malformed: ${parsed.error.issues.map((i) => i.message).join('; ')}`)
  const a = parsed.data
  if (a.nonce !== request.nonce.toString('hex') || a.internalPort !== request.port)
    throw new Error(`the router's PCP answer is for another request (nonce or port ${a.internalPort} differ)`)
  if (a.result !== 0)
    throw new Error(`the router refused the pinhole: PCP result ${a.result} ${RESULTS[a.result] ?? '(unknown)'}`)
  if (request.lifetimeS > 0 && (a.lifetimeS === 0 || a.externalPort === 0))
    throw new Error('the router answered success but granted no lifetime or port')
  return { externalAddress: a.externalAddress, externalPort: a.externalPort, lifetimeS: a.lifetimeS, epochS: a.epochS }
}

/**
 * Sends one MAP from `internal` (the socket is bound to it: the router checks the sender is the address named) to the
 * router, resending at 250 ms, 500 ms, 1 s as RFC 6887 allows, until an answer comes or `timeoutMs` passes. Datagrams
 * from anyone but the router are ignored; the router's first answer decides.
 */
export function requestPinhole(request: PinholeRequest): Promise<PinholeGrant> {
  const { router, routerPort = PCP_PORT, timeoutMs = 2_000 } = request
  const message = encodeMapRequest(request)
  const socket = createSocket({ type: 'udp6', recvBufferSize: 64 * 1024 })
  const routerAddress = router.split('%')[0]?.toLowerCase() ?? ''
  return new Promise<PinholeGrant>((resolve, reject) => {
    const timers: NodeJS.Timeout[] = []
    let settled = false
    const finish = (settle: () => void) => {
      if (settled) return
      settled = true
      for (const t of timers) clearTimeout(t)
      socket.close()
      settle()
    }
    socket.on('error', (error) => finish(() => reject(new Error(`PCP to ${router} failed: ${error.message}`))))
    socket.on('message', (answer, from) => {
      if (from.address.split('%')[0]?.toLowerCase() !== routerAddress || from.port !== routerPort) return
      try {
        const grant = decodeMapAnswer(answer, request)
        finish(() => resolve(grant))
      } catch (error) {
        finish(() => reject(error))
      }
    })
    const send = () => socket.send(message, routerPort, router, (error) => error && socket.emit('error', error))
    socket.bind(0, request.internal, () => {
      send()
      for (const at of [250, 750, 1_750]) if (at < timeoutMs) timers.push(setTimeout(send, at))
      timers.push(
        setTimeout(
          () => finish(() => reject(new Error(`the router (${router}) gave no PCP answer within ${timeoutMs} ms`))),
          timeoutMs,
        ),
      )
    })
  })
}

/** An IPv6 address (a zone `%eth0` ignored) as its 16 bytes; the URL parser expands embedded IPv4 into hex groups. */
export function ipv6Bytes(address: string): Buffer {
  const bare = address.split('%')[0] ?? ''
  if (!isIPv6(bare)) throw new Error(`${address} is not an IPv6 address`)
  const canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1)
  const [head = '', tail] = canonical.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)))
  const h = groups(head)
  const t = tail === undefined ? [] : groups(tail)
  const all = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t]
  const out = Buffer.alloc(16)
  for (const [i, v] of all.entries()) out.writeUInt16BE(v, i * 2)
  return out
}

/** 16 bytes as an IPv6 address in its shortest form (RFC 5952, as the URL parser writes it). */
export function ipv6Text(bytes: Buffer): string {
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16))
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
}
