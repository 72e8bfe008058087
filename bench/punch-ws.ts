// The baseline of bench/punch-transport.ts: today's data plane, a host's DataPlaneListener over TLS with its own
// self-signed certificate, and the caller's WebSocket pinned to that certificate's fingerprint
// (dataplane/tls-trust.ts), each frame one binary message, as dataplane/hop-link.ts sends them.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type WebSocket from 'ws'
import { dataPlaneSocket } from '../dataplane/tls-trust'
import { hostCertificate } from '../host/network/certificate'
import { DataPlaneListener } from '../host/serving/data-plane-listener'
import { NodeIdentity } from '../identity/keys'
import type { FrameChannel } from './punch-frames'

export interface WsHop {
  readonly endpoint: string
  readonly fingerprint: string
  close(): Promise<void>
}

/** A hop's data-plane port on loopback, answering each frame with `answer(frame)`. */
export async function listenWs(answer: (frame: Buffer) => Buffer, maxFrameBytes: number): Promise<WsHop> {
  const dataDir = await mkdtemp(join(tmpdir(), 'punch-ws-'))
  const tls = await hostCertificate(dataDir, NodeIdentity.generate())
  const listener = await DataPlaneListener.listen(0, '127.0.0.1', tls, {
    handle: async (bytes) => answer(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
    maxFrameBytes,
  })
  return {
    endpoint: listener.endpoint,
    fingerprint: tls.fingerprint,
    close: async () => {
      await listener.close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/** The caller's WebSocket to `endpoint`, open, with the hop link's options. */
export function connectWs(endpoint: string, fingerprint: string): Promise<FrameChannel> {
  const socket = dataPlaneSocket(endpoint, { fingerprint, maxPayload: 256 * 1024 * 1024 })
  socket.binaryType = 'nodebuffer'
  return new Promise((resolve, reject) => {
    socket.once('error', (e) => reject(new Error(`cannot connect to the bench hop at ${endpoint}: ${e.message}`)))
    socket.once('open', () => resolve(wsChannel(socket)))
  })
}

function wsChannel(socket: WebSocket): FrameChannel {
  return {
    // as the hop link does: handed to ws, which writes it behind any earlier frame
    send: async (frame) => socket.send(frame),
    onFrame: (listener) => socket.on('message', (data) => listener(data as Buffer)),
    close: () =>
      new Promise((resolve) => {
        if (socket.readyState === socket.CLOSED) return resolve()
        socket.once('close', () => resolve())
        socket.close()
      }),
  }
}
