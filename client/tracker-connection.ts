import { io, type Socket } from 'socket.io-client'
import type { NodeIdentity } from '../identity/keys'
import { AuthChallenge, NeuronError, type RpcSocket } from '../protocol'

export type TrackerNamespace = '/hosts' | '/clients'

/** A tracker URL as it is kept, compared and joined to paths: without trailing slashes. */
export function trackerBase(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * Opens an authenticated Socket.IO connection to a tracker: fetches a challenge over HTTP,
 * signs it with this node's key, and presents the signature in the handshake.
 */
export async function connectTracker(trackerUrl: string, namespace: TrackerNamespace, identity: NodeIdentity, timeoutMs = 10_000): Promise<Socket & RpcSocket> {
  const base = trackerBase(trackerUrl)
  let challenge: AuthChallenge
  try {
    const res = await fetch(`${base}/auth/challenge`, { signal: AbortSignal.timeout(timeoutMs) })
    challenge = AuthChallenge.parse(await res.json())
  } catch (cause) {
    throw new NeuronError(
      'tracker_unreachable',
      `cannot reach the tracker at ${base} (${cause instanceof Error ? cause.message : cause}); check the URL and that it is running.`,
      { trackerUrl: base },
    )
  }
  const socket = io(`${base}${namespace}`, {
    auth: identity.answer(namespace, challenge.nonce),
    transports: ['websocket'],
    reconnection: false,
    timeout: timeoutMs,
  })
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('connect_error', (error: Error & { data?: { code?: string } }) => {
      socket.close()
      reject(new NeuronError(error.data?.code ?? 'tracker_unreachable', `tracker ${base} refused the connection: ${error.message}`, { trackerUrl: base }))
    })
  })
  return socket as Socket & RpcSocket
}
