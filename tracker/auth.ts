import { randomBytes } from 'node:crypto'
import { nodeIdOf, verifySignature } from '../identity/keys'
import { type AuthChallenge, challengeMessage, HandshakeAuth, NeuronError } from '../protocol'

/** Single-use nonces for the signed-challenge handshake. */
export class ChallengeIssuer {
  private readonly open = new Map<string, number>()

  constructor(private readonly ttlMs = 60_000) {}

  issue(now = Date.now()): AuthChallenge {
    this.sweep(now)
    const nonce = randomBytes(24).toString('base64url')
    const expiresAt = now + this.ttlMs
    this.open.set(nonce, expiresAt)
    return { nonce, expiresAt }
  }

  /**
   * Checks a handshake for `namespace`; returns the node id it proves. The nonce is spent even
   * when the signature is wrong, so a challenge can't be guessed at.
   */
  verify(namespace: string, auth: unknown, now = Date.now()): { nodeId: string; publicKey: string } {
    const parsed = HandshakeAuth.safeParse(auth)
    if (!parsed.success)
      throw new NeuronError('unauthenticated', 'connect with auth { publicKey, nonce, signature }: fetch a nonce from GET /auth/challenge and sign it.')
    const { publicKey, nonce, signature } = parsed.data
    const expiresAt = this.open.get(nonce)
    this.open.delete(nonce)
    if (expiresAt === undefined || expiresAt < now)
      throw new NeuronError('unauthenticated', 'the challenge nonce is unknown, used or expired; fetch a fresh one from GET /auth/challenge.')
    if (!verifySignature(publicKey, challengeMessage(namespace, nonce), signature)) {
      throw new NeuronError('unauthenticated', `the signature does not match public key ${publicKey.slice(0, 8)}… for namespace ${namespace}.`)
    }
    return { nodeId: nodeIdOf(publicKey), publicKey }
  }

  private sweep(now: number): void {
    for (const [nonce, expiresAt] of this.open) if (expiresAt < now) this.open.delete(nonce)
  }
}
