// The punched channel's framing, over a real werift pair on 127.0.0.1 (the signalling in process): whole frames both
// ways however large, and a peer that breaks the framing (a length past the bound, a text message) gets its channel
// closed before anything it claims is allocated.
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RTCDataChannel, RTCPeerConnectionConfig } from 'werift'
import { StunServer } from '../tracker/reachability/stun-server'
import { answerChannel, type FrameChannel, iceConfig, offerChannel } from './punched-channel'

// a STUN server of the test's own on loopback (werift asks a public one when given none)
let stun: StunServer
let LOOPBACK: Partial<RTCPeerConnectionConfig>
beforeAll(async () => {
  stun = await StunServer.listen(0, '127.0.0.1')
  LOOPBACK = iceConfig('http://127.0.0.1:1', stun.port)
})
afterAll(() => stun?.close())
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

async function pair(): Promise<[FrameChannel, FrameChannel]> {
  let accepted: (c: FrameChannel) => void = () => {}
  const host = new Promise<FrameChannel>((resolve) => {
    accepted = resolve
  })
  const client = await offerChannel(async (offer) => (await answerChannel(offer, LOOPBACK, accepted)).answer, LOOPBACK)
  return [client, await host]
}

const next = (c: FrameChannel) => new Promise<Uint8Array>((resolve) => c.onFrame(resolve))
const closed = (c: FrameChannel) => new Promise<void>((resolve) => c.onClose(resolve))

describe('a punched frame channel', () => {
  it('carries a 4 KiB and a 3 MiB frame intact both ways', async () => {
    const [client, host] = await pair()
    try {
      const small = randomBytes(4096)
      const large = randomBytes(3 * 1024 * 1024 + 7)
      const atHost = next(host)
      await client.send(small)
      expect(sha(await atHost)).toBe(sha(small))
      const atClient = next(client)
      await host.send(large)
      expect(sha(await atClient)).toBe(sha(large))
    } finally {
      client.close()
      host.close()
    }
  }, 30_000)

  it('closes the channel of a peer that claims a frame past the bound, or sends text', async () => {
    for (const hostile of [Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3]), 'a text message']) {
      const [client, host] = await pair()
      const hostClosed = closed(host)
      const raw = (client as unknown as { dc: RTCDataChannel }).dc
      raw.send(hostile as Buffer)
      await hostClosed
      expect(host.isOpen).toBe(false)
      await expect(host.send(randomBytes(8))).rejects.toMatchObject({ code: 'hop_unreachable' })
      client.close()
    }
  }, 30_000)
})
