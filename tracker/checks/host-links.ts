import { HopFailure, type HopLink, rejectIfError, WebSocketHopLink } from '../../dataplane/hop-link'
import type { TrustedCa } from '../../dataplane/tls-trust'
import { callRpc, decodeFrame, type Frame, type RpcSocket, TrackerToHost } from '../../protocol'

/** How long the tracker waits for one answer of a probe or an audit's re-run. */
const CHECK_TIMEOUT_MS = 30_000

/** Frames the tracker sends a relayed host itself, over the host's own Socket.IO connection. */
class OwnRelayLink implements HopLink {
  constructor(
    private readonly hostId: string,
    private readonly socket: RpcSocket,
    /** The key the host binds the session to: the tracker's client key, as for any relayed client. */
    private readonly from: string,
  ) {}

  async request(bytes: Uint8Array): Promise<Frame> {
    const { frame } = await callRpc(
      this.socket,
      TrackerToHost,
      'relay.frame',
      { frame: bytes, from: this.from },
      CHECK_TIMEOUT_MS,
    ).catch((e: Error) => {
      throw new HopFailure(this.hostId, 'hop_unreachable', e.message)
    })
    return rejectIfError(this.hostId, decodeFrame(frame))
  }

  close(): void {}
}

/**
 * Opens the tracker's own data-plane link to a host: its WebSocket
 * endpoint, or its tracker connection when it is relayed.
 */
export async function linkToHost(
  hostId: string,
  endpoint: string | null,
  socket: RpcSocket | undefined,
  clientKey: string,
  ca: TrustedCa | undefined,
  /** The certificate the host signed into its state: a wss:// endpoint must present it. */
  fingerprint?: string,
): Promise<HopLink> {
  if (endpoint !== null)
    return WebSocketHopLink.connect(hostId, endpoint, { timeoutMs: CHECK_TIMEOUT_MS, ca, fingerprint })
  if (socket === undefined)
    throw new HopFailure(hostId, 'hop_unreachable', `host ${hostId} is not connected to the tracker`)
  return new OwnRelayLink(hostId, socket, clientKey)
}
