import { z } from 'zod'

/** An ed25519 public key: its 32 raw bytes, base64url without padding. */
export const PublicKey = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a public key is 32 bytes of ed25519, base64url')
/** A node's id: the first 20 hex digits of sha256(public key bytes). */
export const NodeId = z.string().regex(/^[0-9a-f]{20}$/, 'a node id is 20 hex digits')
export type NodeId = z.infer<typeof NodeId>

export const AuthChallenge = z.object({ nonce: z.string().min(16), expiresAt: z.number() })
export type AuthChallenge = z.infer<typeof AuthChallenge>

/** Socket.IO handshake `auth`: a signature over the challenge proves the key is held. */
export const HandshakeAuth = z.object({
  publicKey: PublicKey,
  nonce: z.string().min(16),
  signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url'),
})
export type HandshakeAuth = z.infer<typeof HandshakeAuth>

/** The exact bytes a node signs to answer a challenge for one namespace. */
export function challengeMessage(namespace: string, nonce: string): string {
  return `neuron-auth/1 ${namespace} ${nonce}`
}
