import { readFileSync } from 'node:fs'
import { rootCertificates, type TLSSocket } from 'node:tls'
import WebSocket from 'ws'
import { fingerprintOf } from '../protocol'

/**
 * PEM certificates to trust besides the system's, for a tracker or host whose certificate the
 * system does not know (self-signed, or from a private CA). Whole programs can instead be started
 * with NODE_EXTRA_CA_CERTS=ca.pem, which Node reads at startup.
 */
export type TrustedCa = string | readonly string[]

let extraCas: string[] | undefined

/** NODE_EXTRA_CA_CERTS as Node read it at startup (Node's trust store keeps it, tls.rootCertificates does not). */
function extraCaCertificates(): string[] {
  if (extraCas === undefined) {
    const path = process.env.NODE_EXTRA_CA_CERTS
    try {
      extraCas = path === undefined || path === '' ? [] : [readFileSync(path, 'utf8')]
    } catch {
      // Node warned at startup and runs without it: so do we.
      extraCas = []
    }
  }
  return extraCas
}

/**
 * The `ca` option of a TLS client (https, ws, Socket.IO) that trusts `ca` as well as the system's
 * roots: Node's own `ca` option replaces them, which would refuse every other properly certified
 * host. Empty without `ca`, so Node's defaults apply untouched.
 */
export function caOption(ca: TrustedCa | undefined): { ca?: string[] } {
  if (ca === undefined) return {}
  return { ca: [...rootCertificates, ...extraCaCertificates(), ...(typeof ca === 'string' ? [ca] : ca)] }
}

/** A server's certificate for https:// or wss://: PEM private key and certificate chain (leaf first). */
export interface TlsCertificate {
  readonly key: string
  readonly cert: string
}

/**
 * A WebSocket to a host's data plane. With `fingerprint` (the certificate the host signed into its state, which the
 * route carries) the certificate is pinned: no CA vouches for a host's self-made certificate, its fingerprint does,
 * and a connection presenting another is closed before any frame
 * is sent. Without one, `ca` and the system's roots apply.
 */
export function dataPlaneSocket(
  url: string,
  {
    fingerprint,
    ca,
    maxPayload,
  }: { fingerprint?: string | undefined; ca?: TrustedCa | undefined; maxPayload?: number },
): WebSocket {
  const pinned = fingerprint !== undefined && url.startsWith('wss:')
  const socket = new WebSocket(url, {
    ...(maxPayload === undefined ? {} : { maxPayload }),
    ...(pinned ? { rejectUnauthorized: false } : caOption(ca)),
  })
  if (pinned) {
    socket.once('upgrade', (response) => {
      const presented = fingerprintOf((response.socket as TLSSocket).getPeerCertificate().fingerprint256 ?? '')
      if (presented === fingerprint) return
      socket.emit(
        'error',
        new Error(
          `the host at ${url} presented certificate ${presented.slice(0, 16)}…, not the pinned ` +
            `${fingerprint.slice(0, 16)}…`,
        ),
      )
      // closing a socket still connecting makes ws say so as an error too: the one above already told why
      socket.on('error', () => {})
      socket.terminate()
    })
  }
  return socket
}
