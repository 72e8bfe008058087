// werift, the WebRTC stack issue 39 measured for hole punching (bench/punch-transport.ts), working on this Node: two
// peers on 127.0.0.1 with one ordered, reliable data channel carry hidden-state frames both ways. A prefill frame is
// past a data channel's max-message-size (werift's default is 64 KiB), so it goes length-prefixed in pieces.
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RTCDataChannel, RTCPeerConnection, type RTCPeerConnectionConfig } from 'werift'
import { StunServer } from '../tracker/reachability/stun-server'

/**
 * Host candidates on loopback only, and a STUN server of the test's own there: werift asks stun.l.google.com when
 * given none, and no test leaves this host.
 */
let stun: StunServer
const loopback = (): RTCPeerConnectionConfig => ({
  iceServers: [{ urls: `stun:127.0.0.1:${stun.port}` }],
  iceUseIpv6: false,
  iceAdditionalHostAddresses: ['127.0.0.1'],
  iceFilterCandidatePair: (pair) =>
    pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
})
const MESSAGE_BYTES = 64 * 1024

function loopbackSdp(sdp: string | undefined): string {
  return (sdp ?? '')
    .split('\r\n')
    .filter((line) => !line.startsWith('a=candidate:') || line.split(' ')[4] === '127.0.0.1')
    .join('\r\n')
}

async function openPair(): Promise<{ peers: RTCPeerConnection[]; channels: RTCDataChannel[] }> {
  const [offerer, answerer] = [new RTCPeerConnection(loopback()), new RTCPeerConnection(loopback())]
  const sent = offerer.createDataChannel('hop', { ordered: true })
  const opened = sent.stateChanged.watch((state) => state === 'open', 10_000)
  const accepted = answerer.onDataChannel.asPromise(10_000)
  await offerer.setLocalDescription(await offerer.createOffer())
  await answerer.setRemoteDescription({ type: 'offer', sdp: loopbackSdp(offerer.localDescription?.sdp) })
  await answerer.setLocalDescription(await answerer.createAnswer())
  await offerer.setRemoteDescription({ type: 'answer', sdp: loopbackSdp(answerer.localDescription?.sdp) })
  const [[received]] = await Promise.all([accepted, opened])
  return { peers: [offerer, answerer], channels: [sent, received] }
}

/** `frame` as a u32 length and its bytes, in messages of at most MESSAGE_BYTES. */
function sendFrame(channel: RTCDataChannel, frame: Buffer): void {
  const whole = Buffer.concat([Buffer.alloc(4), frame])
  whole.writeUInt32BE(frame.byteLength, 0)
  for (let at = 0; at < whole.byteLength; at += MESSAGE_BYTES) channel.send(whole.subarray(at, at + MESSAGE_BYTES))
}

/** The next `count` frames on `channel`, reassembled. */
function receiveFrames(channel: RTCDataChannel, count: number): Promise<Buffer[]> {
  const frames: Buffer[] = []
  let pieces: Buffer[] = []
  let have = 0
  return new Promise((resolve, reject) => {
    const { unSubscribe } = channel.onMessage.subscribe((message) => {
      if (typeof message === 'string') return reject(new Error('a text message where frames are binary'))
      pieces.push(message)
      have += message.byteLength
      // a frame's first message holds its whole length prefix
      const length = (pieces[0] as Buffer).readUInt32BE(0)
      if (have < 4 + length) return
      frames.push(Buffer.concat(pieces).subarray(4, 4 + length))
      pieces = []
      have = 0
      if (frames.length === count) {
        unSubscribe()
        resolve(frames)
      }
    })
  })
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')
/** UDP sockets and timers open in this process (ICE's sockets, SCTP's and DTLS's retransmission timers). */
function openHandles(): { udp: number; timers: number } {
  const open = process.getActiveResourcesInfo()
  return { udp: open.filter((r) => r === 'UDPWrap').length, timers: open.filter((r) => r === 'Timeout').length }
}

describe('a werift data channel on loopback', () => {
  beforeAll(async () => {
    stun = await StunServer.listen(0, '127.0.0.1')
  })
  afterAll(() => stun?.close())

  it('carries a 2 MiB frame cut into messages and a 4 KiB frame intact both ways, and closes its sockets', async () => {
    const before = openHandles()
    const { peers, channels } = await openPair()
    const [a, b] = channels as [RTCDataChannel, RTCDataChannel]
    const prefill = [randomBytes(2 * 1024 * 1024), randomBytes(2 * 1024 * 1024)]
    const decode = [randomBytes(4096), randomBytes(4096)]
    const atB = receiveFrames(b, 2)
    const atA = receiveFrames(a, 2)
    sendFrame(a, prefill[0] as Buffer)
    sendFrame(a, decode[0] as Buffer)
    sendFrame(b, prefill[1] as Buffer)
    sendFrame(b, decode[1] as Buffer)
    const [fromA, fromB] = await Promise.all([atB, atA])
    expect(fromA.map(sha256)).toEqual([sha256(prefill[0] as Buffer), sha256(decode[0] as Buffer)])
    expect(fromB.map(sha256)).toEqual([sha256(prefill[1] as Buffer), sha256(decode[1] as Buffer)])
    expect(fromA.map((f) => f.byteLength)).toEqual([2 * 1024 * 1024, 4096])

    await Promise.all(peers.map((p) => p.close()))
    // werift closes its UDP sockets a moment after close() resolves
    const settled = () => openHandles().udp <= before.udp && openHandles().timers <= before.timers
    for (let waited = 0; !settled() && waited < 2000; waited += 50) await new Promise((r) => setTimeout(r, 50))
    expect(openHandles().udp).toBe(before.udp)
    expect(openHandles().timers).toBeLessThanOrEqual(before.timers)
  }, 30_000)
})
