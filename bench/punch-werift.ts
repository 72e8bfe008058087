// WebRTC through werift for bench/punch-transport.ts: an RTCPeerConnection pair on loopback (host candidates only,
// vanilla ICE: each description carries its candidates) with one ordered, reliable data channel. A frame goes as
// messages of at most `maxMessage` bytes (SCTP's max-message-size: werift's default is 64 KiB, a browser's 256 KiB),
// length-prefixed and reassembled, the way a transport over a data channel would have to carry a 2 MiB prefill.
import { type RTCDataChannel, RTCPeerConnection, type RTCPeerConnectionConfig } from 'werift'
import { StunServer } from '../tracker/reachability/stun-server'
import { chunked, type FrameChannel, FrameReassembler } from './punch-frames'

/**
 * Loopback and nothing else: a STUN server of this process's own (werift asks stun.l.google.com when given none), and
 * no pair through another interface's address (werift gathers every interface's; 127.0.0.1 only when asked to).
 */
const stun = await StunServer.listen(0, '127.0.0.1')
const LOOPBACK_ONLY: RTCPeerConnectionConfig = {
  iceServers: [{ urls: `stun:127.0.0.1:${stun.port}` }],
  iceUseIpv6: false,
  iceAdditionalHostAddresses: ['127.0.0.1'],
  iceFilterCandidatePair: (pair) =>
    pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
  // what each side may receive in one message (SDP max-message-size); the sender still cuts at `maxMessage`
  maxMessageSize: 256 * 1024,
}

/** Bytes queued in the data channel past which `send` waits, and the level it waits for. */
const HIGH_WATER = 1024 * 1024
const LOW_WATER = 256 * 1024

/** `sdp` without the candidates of other addresses than 127.0.0.1: the peer never tries them. */
function loopbackSdp(sdp: string): string {
  return sdp
    .split('\r\n')
    .filter((line) => !line.startsWith('a=candidate:') || line.split(' ')[4] === '127.0.0.1')
    .join('\r\n')
}

/** The caller's side: an offer out through `exchange`, the answer in; resolves once the channel is open. */
export async function offerWerift(
  exchange: (offer: string) => Promise<string>,
  maxMessage: number,
  maxFrameBytes: number,
): Promise<{ channel: FrameChannel; setupMs: number }> {
  const pc = new RTCPeerConnection(LOOPBACK_ONLY)
  const started = performance.now()
  const dc = pc.createDataChannel('hop', { ordered: true })
  const opened = dc.stateChanged.watch((state) => state === 'open')
  await pc.setLocalDescription(await pc.createOffer())
  const answer = await exchange(loopbackSdp(pc.localDescription?.sdp ?? ''))
  await pc.setRemoteDescription({ type: 'answer', sdp: answer })
  await opened
  return { channel: dataChannel(dc, pc, maxMessage, maxFrameBytes), setupMs: performance.now() - started }
}

/** The hop's side: answers `offer` and each frame on the channel the caller opens with `answer(frame)`. */
export async function answerWerift(
  offer: string,
  answer: (frame: Buffer) => Buffer,
  maxMessage: number,
  maxFrameBytes: number,
): Promise<{ sdp: string; close(): Promise<void> }> {
  const pc = new RTCPeerConnection(LOOPBACK_ONLY)
  pc.onDataChannel.subscribe((dc) => {
    const channel = dataChannel(dc, pc, maxMessage, maxFrameBytes)
    channel.onFrame((frame) => void channel.send(answer(frame)))
  })
  await pc.setRemoteDescription({ type: 'offer', sdp: offer })
  await pc.setLocalDescription(await pc.createAnswer())
  return { sdp: loopbackSdp(pc.localDescription?.sdp ?? ''), close: () => pc.close() }
}

function dataChannel(dc: RTCDataChannel, pc: RTCPeerConnection, maxMessage: number, maxFrameBytes: number) {
  dc.bufferedAmountLowThreshold = LOW_WATER
  const channel: FrameChannel = {
    send: async (frame) => {
      for (const message of chunked(frame, maxMessage)) {
        if (dc.bufferedAmount > HIGH_WATER) await dc.bufferedAmountLow.asPromise()
        dc.send(message)
      }
    },
    onFrame: (listener) => {
      const reassembler = new FrameReassembler(listener, maxFrameBytes)
      dc.onMessage.subscribe((message) => {
        if (typeof message === 'string') throw new Error('a text message on the frame channel: frames are binary')
        reassembler.push(message)
      })
    },
    close: () => pc.close(),
  }
  return channel
}
