import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'

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
