// QUIC through @chainsafe/libp2p-quic 1.1.8 (quinn in Rust, a prebuilt binary per platform; 2.x needs Node 22) for
// bench/punch-transport.ts: one bidirectional stream, frames length-prefixed. It is not a dependency: the registry
// this project installs from has its linux-x64 binaries only, and a lockfile with it fails `npm ci` ("Missing:
// @chainsafe/libp2p-quic-darwin-arm64@ from lock file"). The bench runs it when installed by hand:
//   npm install --no-save @chainsafe/libp2p-quic@1.1.8
// The transport is used without libp2p itself: the upgrader below only hands over the QUIC connection's own stream
// muxer (QUIC encrypts and multiplexes, so libp2p skips both), which is all a dial or a listener asks of it.
import { type FrameChannel, FrameReassembler, lengthPrefix } from './punch-frames'

/** What the bench uses of the libp2p-quic 1.x API (typed here: the package is not installed for the compiler). */
interface QuicStream {
  /** Uint8ArrayLists, each iterable over its parts. */
  readonly source: AsyncIterable<Iterable<Uint8Array>>
  sink(source: AsyncIterable<Uint8Array>): Promise<void>
  close(): Promise<void>
}
interface Muxer {
  newStream(): Promise<QuicStream>
  close(): Promise<void>
}
interface Upgraded {
  readonly maConn: { close(): Promise<void> }
  readonly muxer: Muxer
}
interface UpgradeOptions {
  readonly muxerFactory: { createStreamMuxer(init: { onIncomingStream?: (stream: QuicStream) => void }): Muxer }
}
interface Upgrader {
  upgradeInbound(maConn: Upgraded['maConn'], o: UpgradeOptions): Promise<Upgraded>
  upgradeOutbound(maConn: Upgraded['maConn'], o: UpgradeOptions): Promise<Upgraded>
}
interface Multiaddr {
  toString(): string
}
interface QuicTransport {
  dial(address: Multiaddr, options: { upgrader: Upgrader; signal: AbortSignal }): Promise<Upgraded>
  createListener(options: { upgrader: Upgrader }): {
    listen(address: Multiaddr): Promise<void>
    getAddrs(): Multiaddr[]
    close(): Promise<void>
  }
}
export interface Quic {
  transport(): Promise<QuicTransport>
  multiaddr(address: string): Multiaddr
}

/** The QUIC transport, or why it cannot be had here. */
export async function loadQuic(): Promise<Quic | string> {
  // specifiers in variables: the compiler must not look for packages that are not dependencies
  const names = ['@chainsafe/libp2p-quic', '@libp2p/crypto/keys', '@libp2p/logger', '@multiformats/multiaddr']
  try {
    const [{ quic }, { generateKeyPair }, { defaultLogger }, { multiaddr }] = await Promise.all(
      names.map((name) => import(name)),
    )
    return {
      transport: async () => quic()({ logger: defaultLogger(), privateKey: await generateKeyPair('Ed25519') }),
      multiaddr,
    }
  } catch (error) {
    return (
      `@chainsafe/libp2p-quic does not load (${(error as Error).message.split('\n')[0]}); ` +
      'to measure QUIC too: npm install --no-save @chainsafe/libp2p-quic@1.1.8'
    )
  }
}

/** Frames up to this are copied behind their length prefix and written at once. */
const ONE_WRITE_BYTES = 64 * 1024

/** What libp2p's upgrader would do for a QUIC connection: take its muxer (`onStream` gets the streams it accepts). */
function muxerOnly(onStream?: (stream: QuicStream) => void): Upgrader {
  const upgrade = async (maConn: Upgraded['maConn'], o: UpgradeOptions): Promise<Upgraded> => ({
    maConn,
    muxer: o.muxerFactory.createStreamMuxer(onStream === undefined ? {} : { onIncomingStream: onStream }),
  })
  return { upgradeInbound: upgrade, upgradeOutbound: upgrade }
}

/** A hop's QUIC listener on loopback, answering each frame on each stream with `answer(frame)`. */
export async function listenQuic(
  quic: Quic,
  answer: (frame: Buffer) => Buffer,
  maxFrameBytes: number,
): Promise<{ endpoint: string; close(): Promise<void> }> {
  const listener = (await quic.transport()).createListener({
    upgrader: muxerOnly((stream) => {
      const channel = streamChannel(stream, maxFrameBytes)
      channel.onFrame((frame) => void channel.send(answer(frame)))
    }),
  })
  await listener.listen(quic.multiaddr('/ip4/127.0.0.1/udp/0/quic-v1'))
  const endpoint = listener.getAddrs()[0]
  if (endpoint === undefined) throw new Error('the QUIC listener has no address after listening')
  return { endpoint: endpoint.toString(), close: () => listener.close() }
}

/** The caller's QUIC connection to `endpoint` and its one stream; `setupMs` from dial to the stream open. */
export async function dialQuic(
  quic: Quic,
  endpoint: string,
  maxFrameBytes: number,
): Promise<{ channel: FrameChannel; setupMs: number }> {
  const transport = await quic.transport()
  const started = performance.now()
  const connection = await transport.dial(quic.multiaddr(endpoint), {
    upgrader: muxerOnly(),
    signal: AbortSignal.timeout(10_000),
  })
  const stream = await connection.muxer.newStream()
  const setupMs = performance.now() - started
  const channel = streamChannel(stream, maxFrameBytes)
  return {
    channel: {
      ...channel,
      close: async () => {
        await channel.close()
        await connection.muxer.close()
        await connection.maConn.close()
      },
    },
    setupMs,
  }
}

/** Frames over `stream`: a sink fed from a queue, the source read into a reassembler. */
function streamChannel(stream: QuicStream, maxFrameBytes: number): FrameChannel {
  const outbox = new Outbox()
  const sunk = stream.sink(outbox).catch(() => {})
  return {
    send: async (frame) => {
      // one write for a small frame; a large one is not copied to put its prefix before it
      if (frame.byteLength <= ONE_WRITE_BYTES) return outbox.push(Buffer.concat([lengthPrefix(frame), frame]))
      await outbox.push(lengthPrefix(frame))
      await outbox.push(frame)
    },
    onFrame: (listener) => {
      const reassembler = new FrameReassembler(listener, maxFrameBytes)
      void (async () => {
        for await (const list of stream.source) for (const part of list) reassembler.push(part)
      })().catch(() => {})
    },
    close: async () => {
      outbox.end()
      await sunk
      await stream.close()
    },
  }
}

/** A stream's sink source: `push` resolves once the stream takes the piece (its write of the one before done). */
class Outbox implements AsyncIterable<Uint8Array> {
  private readonly pieces: { piece: Uint8Array; taken: () => void }[] = []
  private wake: (() => void) | undefined
  private ended = false

  push(piece: Uint8Array): Promise<void> {
    return new Promise((taken) => {
      this.pieces.push({ piece, taken })
      this.wake?.()
    })
  }

  end(): void {
    this.ended = true
    this.wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      const next = this.pieces.shift()
      if (next !== undefined) {
        next.taken()
        yield next.piece
        continue
      }
      if (this.ended) return
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
      this.wake = undefined
    }
  }
}
