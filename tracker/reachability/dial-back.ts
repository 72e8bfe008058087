import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { TLSSocket } from 'node:tls'
import { verifySignature } from '../../identity/keys'
import { DIAL_BACK_PATH, DialBackProof, dialBackMessage, fingerprintOf } from '../../protocol'

/** A proof is a key and a signature: a few hundred bytes. Past this the answer is not one. */
const MAX_PROOF_BYTES = 4096

export interface DialBackTarget {
  /** The host's key: the proof must be its signature. */
  readonly publicKey: string
  /** The tracker's key: the message signed names it. */
  readonly trackerKey: string
  /** For wss:// endpoints, the certificate the host signed into its state: any other is not the host. */
  readonly fingerprint?: string
  readonly timeoutMs: number
}

/**
 * Dials `endpoint` (ws:// or wss://) back and asks the host there to sign a fresh nonce: true only when the answer is
 * `publicKey`'s signature and, over TLS, the certificate is the pinned one. Never throws: an address that does not
 * answer in time, answers wrongly or answers for another key is simply not this host's.
 */
export function proveEndpoint(endpoint: string, target: DialBackTarget): Promise<boolean> {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return Promise.resolve(false)
  }
  const tls = url.protocol === 'wss:'
  if (!tls && url.protocol !== 'ws:') return Promise.resolve(false)
  // over TLS, an endpoint without a pinned certificate cannot be told from a man in the middle
  if (tls && target.fingerprint === undefined) return Promise.resolve(false)
  const nonce = randomBytes(24).toString('base64url')
  return new Promise((resolve) => {
    let settled = false
    const done = (ok: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      resolve(ok)
    }
    const options = {
      method: 'GET',
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      path: `${DIAL_BACK_PATH}?tracker=${encodeURIComponent(target.trackerKey)}&nonce=${nonce}`,
      agent: false as const,
    }
    const req = tls ? httpsRequest({ ...options, rejectUnauthorized: false }) : httpRequest(options)
    const timer = setTimeout(() => done(false), target.timeoutMs)
    req.on('error', () => done(false))
    req.on('response', (res) => {
      if (
        tls &&
        fingerprintOf((res.socket as TLSSocket).getPeerCertificate().fingerprint256 ?? '') !== target.fingerprint
      )
        return done(false)
      const chunks: Buffer[] = []
      let bytes = 0
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.byteLength
        if (bytes > MAX_PROOF_BYTES) return done(false)
        chunks.push(chunk)
      })
      res.on('error', () => done(false))
      res.on('end', () => {
        if (res.statusCode !== 200) return done(false)
        try {
          const proof = DialBackProof.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')))
          done(
            proof.publicKey === target.publicKey &&
              verifySignature(target.publicKey, dialBackMessage(target.trackerKey, nonce), proof.signature),
          )
        } catch {
          done(false)
        }
      })
    })
    req.end()
  })
}
