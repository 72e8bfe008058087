// The tracker's STUN server on real UDP sockets: what it answers, what it ignores, how fast it answers one address,
// and that werift (the hole-punching stack) learns a server-reflexive candidate from it.
import { randomBytes } from 'node:crypto'
import { createSocket, type Socket } from 'node:dgram'
import { crc32 } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RTCPeerConnection } from 'werift'
import { Tracker } from '../server'
import { ipBytes, parseBindingRequest } from './stun-binding'
import { StunServer } from './stun-server'

const MAGIC = 0x2112a442

/** A Binding Request (or, with `type`, another message) with the given attributes, and FINGERPRINT when asked. */
function request(options: { type?: number; attributes?: Array<[number, Buffer]>; fingerprint?: boolean } = {}): {
  bytes: Buffer
  transactionId: Buffer
} {
  const transactionId = randomBytes(12)
  const attributes = (options.attributes ?? []).map(([type, value]) => {
    const out = Buffer.alloc(4 + Math.ceil(value.byteLength / 4) * 4)
    out.writeUInt16BE(type, 0)
    out.writeUInt16BE(value.byteLength, 2)
    value.copy(out, 4)
    return out
  })
  const header = Buffer.alloc(20)
  header.writeUInt16BE(options.type ?? 0x0001, 0)
  header.writeUInt32BE(MAGIC, 4)
  transactionId.copy(header, 8)
  let bytes = Buffer.concat([header, ...attributes])
  const withFingerprint = options.fingerprint === true
  bytes.writeUInt16BE(bytes.byteLength - 20 + (withFingerprint ? 8 : 0), 2)
  if (withFingerprint) {
    const attribute = Buffer.alloc(8)
    attribute.writeUInt16BE(0x8028, 0)
    attribute.writeUInt16BE(4, 2)
    attribute.writeUInt32BE((crc32(bytes) ^ 0x5354554e) >>> 0, 4)
    bytes = Buffer.concat([bytes, attribute])
  }
  return { bytes, transactionId }
}

interface Mapped {
  family: 4 | 6
  address: string
  port: number
  fingerprint: boolean
}

/** A Binding Success Response's XOR-MAPPED-ADDRESS, read independently of the server's encoder. */
function readResponse(response: Buffer, transactionId: Buffer): Mapped {
  expect(response.readUInt16BE(0)).toBe(0x0101)
  expect(response.readUInt16BE(2)).toBe(response.byteLength - 20)
  expect(response.readUInt32BE(4)).toBe(MAGIC)
  expect(response.subarray(8, 20).equals(transactionId)).toBe(true)
  let mapped: Omit<Mapped, 'fingerprint'> | undefined
  let fingerprint = false
  for (let at = 20; at < response.byteLength; ) {
    const type = response.readUInt16BE(at)
    const length = response.readUInt16BE(at + 2)
    const value = response.subarray(at + 4, at + 4 + length)
    if (type === 0x0020) {
      const port = value.readUInt16BE(2) ^ 0x2112
      const key = response.subarray(4, 20)
      const ip = Buffer.from(value.subarray(4).map((b, i) => b ^ (key[i] as number)))
      mapped =
        value[1] === 1 ? { family: 4, address: [...ip].join('.'), port } : { family: 6, address: ipv6Text(ip), port }
    }
    if (type === 0x8028) {
      expect(value.readUInt32BE(0)).toBe((crc32(response.subarray(0, at)) ^ 0x5354554e) >>> 0)
      fingerprint = true
    }
    at += 4 + Math.ceil(length / 4) * 4
  }
  if (mapped === undefined) throw new Error(`no XOR-MAPPED-ADDRESS in ${response.toString('hex')}`)
  return { ...mapped, fingerprint }
}

const ipv6Text = (ip: Buffer) =>
  Array.from({ length: 8 }, (_, i) => ip.readUInt16BE(i * 2).toString(16))
    .join(':')
    .replace(/(^|:)0(:0)+(:|$)/, '::')

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A client socket on `address`; `ask` sends datagrams and collects what comes back within `waitMs`. */
async function client(type: 'udp4' | 'udp6', address: string) {
  const socket: Socket = createSocket(type)
  await new Promise<void>((resolve) => socket.bind(0, address, resolve))
  const received: Buffer[] = []
  socket.on('message', (m) => received.push(m))
  return {
    port: socket.address().port,
    async ask(datagrams: Buffer[], to: { port: number; address: string }, waitMs = 300): Promise<Buffer[]> {
      received.length = 0
      for (const d of datagrams) socket.send(d, to.port, to.address)
      await sleep(waitMs)
      return [...received]
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}

describe('the tracker’s STUN server', () => {
  let server: StunServer
  beforeAll(async () => {
    server = await StunServer.listen(0, '127.0.0.1')
  })
  afterAll(() => server.close())
  const at = () => ({ port: server.port, address: '127.0.0.1' })

  it('answers a Binding Request with the sender’s address and port and the request’s transaction id', async () => {
    const me = await client('udp4', '127.0.0.1')
    const plain = request()
    const signed = request({ fingerprint: true, attributes: [[0x8022, Buffer.from('test client')]] })
    const [first] = await me.ask([plain.bytes], at())
    const [second] = await me.ask([signed.bytes], at())
    expect(readResponse(first as Buffer, plain.transactionId)).toEqual({
      family: 4,
      address: '127.0.0.1',
      port: me.port,
      fingerprint: false,
    })
    expect((first as Buffer).byteLength).toBe(32)
    expect(readResponse(second as Buffer, signed.transactionId)).toEqual({
      family: 4,
      address: '127.0.0.1',
      port: me.port,
      fingerprint: true,
    })
    await me.close()
  })

  it('ignores malformed datagrams and anything but a Binding Request, and keeps answering', async () => {
    const me = await client('udp4', '127.0.0.1')
    const good = request().bytes
    const badCookie = Buffer.from(good)
    badCookie.writeUInt32BE(0x12345678, 4)
    const longer = Buffer.concat([good, Buffer.alloc(4)]) // the length field says 0, the datagram has 24 bytes
    const oddLength = Buffer.concat([good, Buffer.alloc(2)])
    oddLength.writeUInt16BE(2, 2)
    const overrun = request({ attributes: [[0x8022, Buffer.alloc(8)]] }).bytes
    overrun.writeUInt16BE(64, 22) // the attribute claims 64 bytes of an 8-byte message body
    const badFingerprint = request({ fingerprint: true }).bytes
    badFingerprint.writeUInt32BE((badFingerprint.readUInt32BE(24) ^ 1) >>> 0, 24)
    const malformed = [
      good.subarray(0, 19), // short
      Buffer.alloc(0),
      badCookie,
      request({ type: 0x0101 }).bytes, // a response
      request({ type: 0x0011 }).bytes, // a Binding Indication
      request({ type: 0x0003 }).bytes, // Allocate (TURN)
      longer,
      oddLength,
      overrun,
      badFingerprint,
      request({ attributes: [[0x0003, Buffer.alloc(4)]] }).bytes, // CHANGE-REQUEST: a service not given
      request({ attributes: [[0x8022, Buffer.alloc(540)]] }).bytes, // well-formed but 564 bytes: oversized
      Buffer.alloc(1200, 1),
      ...Array.from({ length: 20 }, () => randomBytes(20 + Math.floor(Math.random() * 200))),
    ]
    const before = { ...server.counts }
    expect(await me.ask(malformed, at())).toEqual([])
    expect(server.counts.ignored - before.ignored).toBe(malformed.length)
    const still = request({ attributes: [[0x0006, Buffer.from('user:name')]] }) // USERNAME is ignorable
    const [answer] = await me.ask([still.bytes], at())
    expect(readResponse(answer as Buffer, still.transactionId).port).toBe(me.port)
    await me.close()
  })

  it('never throws on any bytes, however mangled', () => {
    const valid = request({ fingerprint: true, attributes: [[0x0024, Buffer.alloc(4)]] }).bytes
    for (let i = 0; i < 20_000; i++) {
      const mangled = Buffer.from(valid)
      for (let flips = 1 + (i % 4); flips > 0; flips--) {
        const at = Math.floor(Math.random() * mangled.length)
        mangled.writeUInt8((mangled.readUInt8(at) ^ (1 << (i % 8))) & 0xff, at)
      }
      const cut = i % 3 === 0 ? mangled.subarray(0, Math.floor(Math.random() * mangled.length)) : mangled
      expect(() => parseBindingRequest(cut)).not.toThrow()
      expect(() => parseBindingRequest(randomBytes(i % 600))).not.toThrow()
    }
  })

  it('reads every form of address a socket reports: IPv4, IPv4-mapped, IPv6 with a zone or an IPv4 tail', () => {
    expect(ipBytes('198.51.100.7')?.toString('hex')).toBe('c6336407')
    expect(ipBytes('::ffff:198.51.100.7')?.toString('hex')).toBe('c6336407')
    expect(ipBytes('2001:db8::1')?.toString('hex')).toBe('20010db8000000000000000000000001')
    expect(ipBytes('fe80::1:2%eth0')?.toString('hex')).toBe('fe800000000000000000000000010002')
    expect(ipBytes('64:ff9b::198.51.100.7')?.toString('hex')).toBe('0064ff9b0000000000000000c6336407')
    expect(ipBytes('::')?.toString('hex')).toBe('0'.repeat(32))
    expect(ipBytes('example.org')).toBeUndefined()
  })

  it('answers one address at most its burst at once, then its rate, while another address is answered', async () => {
    const flooder = await client('udp4', '127.0.0.1')
    const bystander = await client('udp4', '127.0.0.2')
    const flood = Array.from({ length: 100 }, () => request().bytes)
    const asked = request()
    const started = performance.now()
    const [answered, [forBystander]] = await Promise.all([
      flooder.ask(flood, at(), 300),
      bystander.ask([asked.bytes], at(), 300),
    ])
    const floodMs = performance.now() - started
    // 20 at once, plus 20/s for as long as the flood and the wait took
    expect(answered.length).toBeGreaterThanOrEqual(20)
    expect(answered.length).toBeLessThanOrEqual(20 + Math.ceil((floodMs / 1000) * 20))
    expect(readResponse(forBystander as Buffer, asked.transactionId).address).toBe('127.0.0.2')
    const later = await flooder.ask(
      Array.from({ length: 20 }, () => request().bytes),
      at(),
      500,
    )
    expect(later.length).toBeGreaterThanOrEqual(4) // the 300 ms wait refilled about 6
    expect(later.length).toBeLessThanOrEqual(12)
    await Promise.all([flooder.close(), bystander.close()])
  })

  it('gives werift a server-reflexive candidate (typ srflx) for its host candidate', async () => {
    const pc = new RTCPeerConnection({
      iceServers: [{ urls: `stun:127.0.0.1:${server.port}` }],
      iceUseIpv6: false,
      iceAdditionalHostAddresses: ['127.0.0.1'],
    })
    try {
      pc.createDataChannel('probe')
      const gathered = pc.iceGatheringStateChange.watch((state) => state === 'complete', 10_000)
      await pc.setLocalDescription(await pc.createOffer())
      await gathered
      const candidates = (pc.localDescription?.sdp ?? '').split('\r\n').filter((l) => l.startsWith('a=candidate:'))
      const host = candidates.find((c) => c.includes(' 127.0.0.1 ') && c.includes('typ host'))
      const port = host?.split(' ')[5]
      expect(candidates).toContainEqual(
        expect.stringMatching(new RegExp(`127\\.0\\.0\\.1 ${port} typ srflx raddr 127\\.0\\.0\\.1 rport ${port}`)),
      )
    } finally {
      await pc.close()
    }
  })
})

describe('the STUN server on IPv6', () => {
  it('answers with an IPv6 XOR-MAPPED-ADDRESS, and an IPv4 one to an IPv4 sender on a dual-stack socket', async () => {
    const server = await StunServer.listen(0, '::')
    try {
      const v6 = await client('udp6', '::1')
      const asked = request()
      const [answer] = await v6.ask([asked.bytes], { port: server.port, address: '::1' })
      expect(readResponse(answer as Buffer, asked.transactionId)).toEqual({
        family: 6,
        address: '::1',
        port: v6.port,
        fingerprint: false,
      })
      expect((answer as Buffer).byteLength).toBe(44)
      const v4 = await client('udp4', '127.0.0.1')
      const asked4 = request()
      const [answer4] = await v4.ask([asked4.bytes], { port: server.port, address: '127.0.0.1' })
      expect(readResponse(answer4 as Buffer, asked4.transactionId)).toMatchObject({ family: 4, address: '127.0.0.1' })
      await Promise.all([v6.close(), v4.close()])
    } finally {
      await server.close()
    }
  })
})

describe('the STUN server of a tracker', () => {
  it(
    'starts with the tracker on its host address (stunPort: a free one by default, none when null), and closes ' +
      'with it',
    async () => {
      const tracker = await Tracker.start({ dbPath: ':memory:', host: '127.0.0.1', port: 0, stunPort: 0 })
      const port = tracker.stunPort as number
      const me = await client('udp4', '127.0.0.1')
      const asked = request()
      const [answer] = await me.ask([asked.bytes], { port, address: '127.0.0.1' })
      expect(readResponse(answer as Buffer, asked.transactionId).port).toBe(me.port)
      await tracker.close()
      expect(await me.ask([request().bytes], { port, address: '127.0.0.1' })).toEqual([])
      await me.close()
      // the port is free again
      const again = await StunServer.listen(port, '127.0.0.1')
      await again.close()
      // by default on a free port, told to hosts and clients (stun.port); null: none
      const byDefault = await Tracker.start({ dbPath: ':memory:', port: 0 })
      expect(byDefault.stunPort).toBeGreaterThan(0)
      await byDefault.close()
      const without = await Tracker.start({ dbPath: ':memory:', port: 0, stunPort: null })
      expect(without.stunPort).toBeUndefined()
      await without.close()
    },
  )
})
