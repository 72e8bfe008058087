import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { challengeMessage, type HandshakeAuth, NeuronError } from '../protocol'

/** A node's ed25519 identity: hosts, clients and apps each hold one in their data dir. */
export class NodeIdentity {
  private constructor(
    private readonly privateKey: KeyObject,
    /** Raw public key, base64url. */
    readonly publicKey: string,
  ) {}

  get id(): string {
    return nodeIdOf(this.publicKey)
  }

  static generate(): NodeIdentity {
    const { privateKey } = generateKeyPairSync('ed25519')
    return NodeIdentity.fromPrivateKey(privateKey)
  }

  private static fromPrivateKey(privateKey: KeyObject): NodeIdentity {
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' })
    if (typeof jwk.x !== 'string') throw new Error('ed25519 key without a public part')
    return new NodeIdentity(privateKey, jwk.x)
  }

  /** Loads `identity.pem` from the data dir, creating it (mode 600) the first time. */
  static async loadOrCreate(dataDir: string): Promise<NodeIdentity> {
    const path = join(dataDir, 'identity.pem')
    let pem: string
    try {
      pem = await readFile(path, 'utf8')
    } catch {
      const fresh = NodeIdentity.generate()
      await mkdir(dataDir, { recursive: true })
      await writeFile(path, fresh.exportPrivatePem(), { mode: 0o600, flag: 'wx' })
      return fresh
    }
    try {
      return NodeIdentity.fromPrivateKey(createPrivateKey(pem))
    } catch {
      throw new NeuronError(
        'bad_identity',
        `${path} is not an ed25519 private key in PEM form; restore it from a backup or delete it to make a new identity.`,
        { path },
      )
    }
  }

  static fromPem(pem: string): NodeIdentity {
    return NodeIdentity.fromPrivateKey(createPrivateKey(pem))
  }

  exportPrivatePem(): string {
    return this.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  }

  sign(message: string | Uint8Array): string {
    return sign(null, typeof message === 'string' ? Buffer.from(message) : message, this.privateKey).toString('base64url')
  }

  /** The Socket.IO handshake answering a tracker's challenge for a namespace. */
  answer(namespace: string, nonce: string): HandshakeAuth {
    return { publicKey: this.publicKey, nonce, signature: this.sign(challengeMessage(namespace, nonce)) }
  }
}

export function nodeIdOf(publicKey: string): string {
  return createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('hex').slice(0, 20)
}

/** A raw ed25519 public key (base64url) as a KeyObject; throws when it is not one. */
export function publicKeyObject(publicKey: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' })
}

/** True when `signature` is `publicKey`'s ed25519 signature of `message`. Never throws on bad input. */
export function verifySignature(publicKey: string, message: string | Uint8Array, signature: string): boolean {
  try {
    return verify(null, typeof message === 'string' ? Buffer.from(message) : message, publicKeyObject(publicKey), Buffer.from(signature, 'base64url'))
  } catch {
    return false
  }
}
