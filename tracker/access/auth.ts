import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Namespace } from 'socket.io'
import { nodeIdOf, verifySignature } from '../../identity/keys'
import {
  type AuthChallenge,
  challengeMessage,
  HandshakeAuth,
  NeuronError,
  NODE_AUTH_HEADER,
  type WireError,
} from '../../protocol'

/**
 * Nonces outstanding at once: anyone may ask for one without logging in, so past this many the
 * oldest is dropped (its holder asks again) rather than memory growing with the asking rate.
 */
export const MAX_OPEN_CHALLENGES = 100_000

/**
 * Where open nonces are kept: this process's memory, or Redis when
 * several tracker instances share the swarm (tracker/cluster/).
 */
export interface NonceBook {
  put(nonce: string, expiresAt: number, now: number): Promise<void>
  /** Spends the nonce, once across every instance: its expiry if it was open, undefined if unknown or spent. */
  take(nonce: string): Promise<number | undefined>
}

/** One process's open nonces, bounded by MAX_OPEN_CHALLENGES. */
export class MemoryNonces implements NonceBook {
  private readonly open = new Map<string, number>()

  async put(nonce: string, expiresAt: number, now: number): Promise<void> {
    this.sweep(now)
    if (this.open.size >= MAX_OPEN_CHALLENGES) {
      const oldest = this.open.keys().next().value
      if (oldest !== undefined) this.open.delete(oldest)
    }
    this.open.set(nonce, expiresAt)
  }

  async take(nonce: string): Promise<number | undefined> {
    const expiresAt = this.open.get(nonce)
    this.open.delete(nonce)
    return expiresAt
  }

  /** Nonces are kept in the order they expire (one TTL for all): the sweep stops at the first live one. */
  private sweep(now: number): void {
    for (const [nonce, expiresAt] of this.open) {
      if (expiresAt >= now) return
      this.open.delete(nonce)
    }
  }
}

/** Single-use nonces for the signed-challenge handshake, each answered for this tracker's key alone. */
export class ChallengeIssuer {
  constructor(
    /** The tracker's public key: every answer must sign it, so a signature made for another tracker fails here. */
    private readonly trackerKey: string,
    private readonly nonces: NonceBook = new MemoryNonces(),
    private readonly ttlMs = 60_000,
  ) {}

  async issue(now = Date.now()): Promise<AuthChallenge> {
    const nonce = randomBytes(24).toString('base64url')
    const expiresAt = now + this.ttlMs
    await this.nonces.put(nonce, expiresAt, now)
    return { nonce, expiresAt, tracker: this.trackerKey }
  }

  /**
   * Checks a handshake for `namespace`; returns the node id it proves. The nonce is spent even
   * when the signature is wrong, so a challenge can't be guessed at.
   */
  async verify(namespace: string, auth: unknown, now = Date.now()): Promise<{ nodeId: string; publicKey: string }> {
    const parsed = HandshakeAuth.safeParse(auth)
    if (!parsed.success)
      throw new NeuronError(
        'unauthenticated',
        'connect with auth { publicKey, nonce, signature }: fetch a nonce from GET /auth/challenge and sign it.',
      )
    const { publicKey, nonce, signature } = parsed.data
    const expiresAt = await this.nonces.take(nonce)
    if (expiresAt === undefined || expiresAt < now)
      throw new NeuronError(
        'unauthenticated',
        'the challenge nonce is unknown, used or expired; fetch a fresh one from GET /auth/challenge.',
      )
    if (!verifySignature(publicKey, challengeMessage(this.trackerKey, namespace, nonce), signature)) {
      throw new NeuronError(
        'unauthenticated',
        `the signature does not match public key ${publicKey.slice(0, 8)}… for namespace ${namespace} on this ` +
          `tracker (key ${this.trackerKey.slice(0, 8)}…); sign the challenge with the tracker key GET ` +
          `/auth/challenge names.`,
      )
    }
    return { nodeId: nodeIdOf(publicKey), publicKey }
  }

  /**
   * The key an HTTP request proves with its `x-neuron-auth: <publicKey>.<nonce>.<signature>` header,
   * signed for `scope`; undefined when it sent none, a typed refusal when the proof is wrong.
   */
  async verifyRequest(
    req: IncomingMessage,
    scope: string,
    now = Date.now(),
  ): Promise<{ nodeId: string; publicKey: string } | undefined> {
    const header = req.headers[NODE_AUTH_HEADER]
    if (header === undefined) return undefined
    const parts = (Array.isArray(header) ? header.join('') : header).split('.')
    if (parts.length !== 3)
      throw new NeuronError(
        'unauthenticated',
        `${NODE_AUTH_HEADER} is <publicKey>.<nonce>.<signature>: sign a nonce from GET /auth/challenge for ${scope}.`,
      )
    const [publicKey, nonce, signature] = parts
    return this.verify(scope, { publicKey, nonce, signature }, now)
  }
}

/**
 * Admits a namespace's connections only with a signed answer to a fresh challenge, from a key the swarm admits, before
 * any event; a refusal says why and is counted (`refused`).
 */
export function admitSigned(
  namespace: Namespace,
  issuer: Pick<ChallengeIssuer, 'verify'>,
  admission: { admits(publicKey: string): boolean },
  refused: (event: string, error: WireError) => void,
): void {
  namespace.use(async (socket, next) => {
    try {
      const { nodeId, publicKey } = await issuer.verify(namespace.name, socket.handshake.auth)
      if (!admission.admits(publicKey)) {
        throw new NeuronError(
          'not_admitted',
          `this is a private swarm and key ${publicKey.slice(0, 8)}… is not on its list; ask the operator to add it.`,
        )
      }
      socket.data = { nodeId, publicKey }
      next()
    } catch (error) {
      const e = error instanceof NeuronError ? error : new NeuronError('unauthenticated', String(error))
      refused(`${namespace.name} connect`, { code: e.code, message: e.message })
      next(Object.assign(new Error(e.message), { data: { code: e.code } }))
    }
  })
}
