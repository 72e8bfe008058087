// Hole punching (issue 39): a client and a host behind routers that map no port open a WebRTC data channel (werift:
// ICE, DTLS, SCTP) through both, the tracker carrying the offer and the answer (its Socket.IO channels, authenticated
// both ways) and answering STUN on its own port. The DTLS certificate's fingerprint travels in those descriptions, so
// a punched channel is pinned as a direct link's certificate is by its route. Frames cross it as on a WebSocket, each
// cut into messages of at most PUNCH_MESSAGE_BYTES behind a 4-byte length.
import { z } from 'zod'

/** The longest session description a peer may send (an offer with a dozen candidates is about 1 KB). */
export const MAX_SDP_CHARS = 16 * 1024
/** A data channel message, at most (werift's default max-message-size, and what a browser takes). */
export const PUNCH_MESSAGE_BYTES = 64 * 1024

/** Where the tracker answers STUN: a UDP port on its own address, or null where it runs no STUN server. */
export const StunPort = z.object({ port: z.number().int().min(1).max(65_535).nullable() })

export const SessionDescription = z
  .string()
  .min(1)
  .max(MAX_SDP_CHARS)
  .refine((sdp) => sdp.startsWith('v=0'), 'a session description starts with "v=0"')
