// Frames for bench/punch-transport.ts: what the caller sends a hop and what the hop answers, and the length-prefixed
// chunking that a transport with a message-size limit (a data channel) or no message boundaries (a QUIC stream)
// carries them in. The WebSocket baseline sends each frame as one message, as dataplane/hop-link.ts does.
import { randomFillSync } from 'node:crypto'

/** A hop's answer is one frame header: it echoes the frame's sequence number and length, which the caller checks. */
export const ANSWER_BYTES = 64
/** Bytes before a frame's hidden states (protocol/frames.ts's header is of this order). */
export const FRAME_HEADER_BYTES = 64
/** The length prefix of a chunked frame: u32, big-endian. */
const PREFIX_BYTES = 4

/** One side of a link under test: whole frames out and in, however the transport cuts them. */
export interface FrameChannel {
  /** Resolves once the transport has taken the frame; the frame must not change until its answer arrives. */
  send(frame: Buffer): Promise<void>
  /** `listener` gets each whole frame from the other side, in order. */
  onFrame(listener: (frame: Buffer) => void): void
  close(): Promise<void>
}

/** A frame of `hiddenBytes` after a header (random bytes: nothing on the way compresses them either way). */
export function hopFrame(hiddenBytes: number): Buffer {
  return randomFillSync(Buffer.alloc(FRAME_HEADER_BYTES + hiddenBytes))
}

/** Marks `frame` as number `seq` (its first 8 bytes: seq, length), in place. */
export function numberFrame(frame: Buffer, seq: number): Buffer {
  frame.writeUInt32BE(seq, 0)
  frame.writeUInt32BE(frame.byteLength, 4)
  return frame
}

/** The hop's answer to `frame`: its seq and the length it received. */
export function answerTo(frame: Buffer): Buffer {
  const answer = Buffer.alloc(ANSWER_BYTES)
  answer.writeUInt32BE(frame.readUInt32BE(0), 0)
  answer.writeUInt32BE(frame.byteLength, 4)
  return answer
}

/** Throws unless `answer` answers frame `seq` of `length` bytes, received whole. */
export function checkAnswer(answer: Buffer, seq: number, length: number): void {
  const [gotSeq, gotLength] = [answer.readUInt32BE(0), answer.readUInt32BE(4)]
  if (answer.byteLength !== ANSWER_BYTES || gotSeq !== seq || gotLength !== length)
    throw new Error(
      `the answer to frame ${seq} (${length} bytes) was for frame ${gotSeq} (${gotLength} bytes, ` +
        `${answer.byteLength}-byte answer): the transport lost or reordered bytes`,
    )
}

/** The u32 big-endian length that goes before `frame` on a chunked or streamed link. */
export function lengthPrefix(frame: Buffer): Buffer {
  const prefix = Buffer.alloc(PREFIX_BYTES)
  prefix.writeUInt32BE(frame.byteLength, 0)
  return prefix
}

/** `frame` as messages of at most `maxMessage` bytes: its length prefix, then the frame, cut where it must be. */
export function* chunked(frame: Buffer, maxMessage: number): Generator<Buffer> {
  const first = Math.min(frame.byteLength, maxMessage - PREFIX_BYTES)
  yield Buffer.concat([lengthPrefix(frame), frame.subarray(0, first)])
  for (let at = first; at < frame.byteLength; at += maxMessage) yield frame.subarray(at, at + maxMessage)
}

/** Whole frames out of the chunks of `chunked` (or any cut of its bytes: a QUIC stream's reads), in order. */
export class FrameReassembler {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES)
  private prefixFilled = 0
  private frame: Buffer | undefined
  private filled = 0

  constructor(
    private readonly onFrame: (frame: Buffer) => void,
    private readonly maxFrameBytes: number,
  ) {}

  push(chunk: Uint8Array): void {
    let at = 0
    while (at < chunk.byteLength) {
      if (this.frame === undefined) {
        const take = Math.min(PREFIX_BYTES - this.prefixFilled, chunk.byteLength - at)
        this.prefix.set(chunk.subarray(at, at + take), this.prefixFilled)
        this.prefixFilled += take
        at += take
        if (this.prefixFilled < PREFIX_BYTES) return
        const length = this.prefix.readUInt32BE(0)
        if (length > this.maxFrameBytes)
          throw new Error(`a frame of ${length} bytes is past this link's ${this.maxFrameBytes}: the stream is corrupt`)
        this.frame = Buffer.allocUnsafe(length)
        this.filled = 0
        this.prefixFilled = 0
      }
      const take = Math.min(this.frame.byteLength - this.filled, chunk.byteLength - at)
      this.frame.set(chunk.subarray(at, at + take), this.filled)
      this.filled += take
      at += take
      if (this.filled === this.frame.byteLength) {
        const whole = this.frame
        this.frame = undefined
        this.onFrame(whole)
      }
    }
  }
}

/** The caller's side of a hop: one frame out, its answer back, one at a time as a generation's steps go. */
export class FrameRequester {
  private waiting: ((answer: Buffer) => void) | undefined

  constructor(private readonly channel: FrameChannel) {
    channel.onFrame((answer) => {
      const resolve = this.waiting
      this.waiting = undefined
      if (resolve === undefined) throw new Error(`an answer of ${answer.byteLength} bytes came with no frame sent`)
      resolve(answer)
    })
  }

  async request(frame: Buffer): Promise<Buffer> {
    if (this.waiting !== undefined) throw new Error('one frame at a time: the last one is still unanswered')
    const answer = new Promise<Buffer>((resolve) => {
      this.waiting = resolve
    })
    await this.channel.send(frame)
    return answer
  }
}
