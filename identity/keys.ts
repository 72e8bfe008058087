import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  verify,
} from 'node:crypto'
import { link, mkdir, open, readFile, unlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { type AuthChallenge, challengeMessage, type HandshakeAuth, NeuronError } from '../protocol'

/** A node's ed25519 identity: hosts, clients and apps each hold one in their data dir. */
export class NodeIdentity {
  private constructor(
    private readonly privateKey: KeyObject,
    /** Raw public key, base64url. */
    readonly publicKey: string,
  ) {}

  /** The node id (a hash of the public key): made once, as every receipt names it. */
  get id(): string {
    this.nodeId ??= nodeIdOf(this.publicKey)
    return this.nodeId
  }
  private nodeId: string | undefined

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
  static loadOrCreate(dataDir: string): Promise<NodeIdentity> {
    return NodeIdentity.loadOrCreateFile(join(dataDir, 'identity.pem'))
  }

  /**
   * Loads a PEM key file, creating it the first time. A new key is written to a unique temp file,
   * fsynced and renamed into place (never over an existing key), so a crash leaves either no file
   * or a whole key: a torn write would mean a new id and orphaned earnings.
   */
  static async loadOrCreateFile(path: string): Promise<NodeIdentity> {
    let pem: string
    try {
      pem = await readFile(path, 'utf8')
    } catch {
      const fresh = NodeIdentity.generate()
      await mkdir(dirname(path), { recursive: true })
      const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
      const file = await open(temp, 'wx', 0o600)
      try {
        await file.writeFile(fresh.exportPrivatePem())
        await file.sync()
      } finally {
        await file.close()
      }
      try {
        // link, not rename: it fails if another process created the key first, and then theirs wins.
        await link(temp, path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        await unlink(temp)
        return NodeIdentity.loadOrCreateFile(path)
      }
      await unlink(temp)
      await syncDir(dirname(path))
      return fresh
    }
    try {
      return NodeIdentity.fromPrivateKey(createPrivateKey(pem))
    } catch {
      throw new NeuronError(
        'bad_identity',
        `${path} is not an ed25519 private key in PEM form; restore it from a backup or delete it to make a new ` +
          `identity.`,
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
    return sign(null, typeof message === 'string' ? Buffer.from(message) : message, this.privateKey).toString(
      'base64url',
    )
  }

  /**
   * Answers a tracker's challenge for a namespace (a Socket.IO handshake's `auth`). The signature names
   * `challenge.tracker`, so it opens only that tracker: check the key is the one you meant to join.
   */
  answer(namespace: string, challenge: Pick<AuthChallenge, 'nonce' | 'tracker'>): HandshakeAuth {
    const { nonce, tracker } = challenge
    return { publicKey: this.publicKey, nonce, signature: this.sign(challengeMessage(tracker, namespace, nonce)) }
  }
}

export function nodeIdOf(publicKey: string): string {
  return createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('hex').slice(0, 20)
}

/** A raw ed25519 public key (base64url) as a KeyObject; throws when it is not one. */
export function publicKeyObject(publicKey: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' })
}

/**
 * True when `signature` is `publicKey`'s ed25519 signature of `message`. Never throws on bad input.
 * A KeyObject (publicKeyObject) saves parsing the key again when one key checks many signatures.
 */
export function verifySignature(
  publicKey: string | KeyObject,
  message: string | Uint8Array,
  signature: string,
): boolean {
  try {
    const key = typeof publicKey === 'string' ? publicKeyObject(publicKey) : publicKey
    return verify(
      null,
      typeof message === 'string' ? Buffer.from(message) : message,
      key,
      Buffer.from(signature, 'base64url'),
    )
  } catch {
    return false
  }
}

/** fsync a directory so a rename or link into it survives a power cut (a no-op where unsupported). */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => undefined)
  if (handle === undefined) return
  try {
    await handle.sync()
  } catch {
    // some filesystems refuse fsync on a directory; the rename itself still happened
  } finally {
    await handle.close()
  }
}
