import { z } from 'zod'
import { MAX_NONCE_CHARS } from './limits'

/** An ed25519 public key: its 32 raw bytes, base64url without padding. */
export const PublicKey = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a public key is 32 bytes of ed25519, base64url')
/** A node's id: the first 20 hex digits of sha256(public key bytes). */
export const NodeId = z.string().regex(/^[0-9a-f]{20}$/, 'a node id is 20 hex digits')
export type NodeId = z.infer<typeof NodeId>

const Nonce = z.string().min(16).max(MAX_NONCE_CHARS)

/** GET /auth/challenge: a single-use nonce, and the key of the tracker that issued it (the answer signs both). */
export const AuthChallenge = z.object({ nonce: Nonce, expiresAt: z.number(), tracker: PublicKey })
export type AuthChallenge = z.infer<typeof AuthChallenge>

/** Socket.IO handshake `auth`: a signature over the challenge proves the key is held. */
export const HandshakeAuth = z.object({
  publicKey: PublicKey,
  nonce: Nonce,
  signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url'),
})
export type HandshakeAuth = z.infer<typeof HandshakeAuth>

/**
 * The exact bytes a node signs to answer a challenge for one namespace of one tracker. Naming the
 * tracker's key means a tracker the node joins cannot relay another tracker's nonce and log in there
 * as the node: that tracker verifies against its own key, and the signature names another.
 */
export function challengeMessage(tracker: string, namespace: string, nonce: string): string {
  return `neuron-auth/2 ${tracker} ${namespace} ${nonce}`
}

/** The scope an HTTP request's signed challenge names (as a namespace does for Socket.IO): the dashboards. */
export const DASHBOARD_SCOPE = '/v1/dashboard'
/** An HTTP request proves its key with `x-neuron-auth: <publicKey>.<nonce>.<signature>`, signed for a scope. */
export const NODE_AUTH_HEADER = 'x-neuron-auth'
