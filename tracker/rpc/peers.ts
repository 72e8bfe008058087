import type { Namespace, Socket } from 'socket.io'
import type { WireError } from '../../protocol'
import { admitSigned, type ChallengeIssuer } from '../access/auth'
import type { Admission } from '../access/private-swarm'

/** An authenticated connection on /hosts or /clients. */
export interface Peer {
  readonly nodeId: string
  readonly publicKey: string
  readonly socket: Socket
}

/** Who may connect to a namespace, and where its refusals are counted. */
export interface NamespaceDeps {
  readonly issuer: Pick<ChallengeIssuer, 'verify'>
  readonly admission: Pick<Admission, 'admits'>
  /** Counts a refused connection or request by its code (Tracker.rejected) and logs it. */
  readonly refused: (event: string, error: WireError) => void
}

/**
 * Admits only signed connections from keys the swarm admits to `namespace`, and hands each admitted one on as
 * the peer it proved to be.
 */
export function onPeer(namespace: Namespace, d: NamespaceDeps, connected: (peer: Peer) => void): void {
  admitSigned(namespace, d.issuer, d.admission, d.refused)
  namespace.on('connection', (socket) =>
    connected({ ...(socket.data as { nodeId: string; publicKey: string }), socket }),
  )
}
