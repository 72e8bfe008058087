import { X509Certificate } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import type { TlsCertificate } from '../../dataplane/tls-trust'
import type { NodeIdentity } from '../../identity/keys'
import { certificateMessage, fingerprintOf } from '../../protocol'

/** The data plane's certificate, with the fingerprint clients pin and the host key's signature of it. */
export interface HostCertificate extends TlsCertificate {
  readonly fingerprint: string
  readonly signature: string
}

/** Long-lived on purpose: clients pin the fingerprint the host signs, not a CA's word, so expiry protects nothing. */
const VALID_DAYS = 3650

/**
 * The host's own TLS certificate (ECDSA P-256, self-signed), made once and kept in `<dataDir>/tls/`, as Syncthing
 * keeps its device certificate: no CA and no user step. A certificate
 * given by the operator (--tls-cert) is pinned the same way.
 */
export async function hostCertificate(
  dataDir: string,
  identity: NodeIdentity,
  given?: TlsCertificate,
): Promise<HostCertificate> {
  const pair = given ?? (await loadOrCreate(join(dataDir, 'tls')))
  const fingerprint = fingerprintOf(new X509Certificate(pair.cert).fingerprint256)
  return { ...pair, fingerprint, signature: identity.sign(certificateMessage(fingerprint)) }
}

async function loadOrCreate(dir: string): Promise<TlsCertificate> {
  const keyPath = join(dir, 'data-plane-key.pem')
  const certPath = join(dir, 'data-plane-cert.pem')
  try {
    const [key, cert] = await Promise.all([readFile(keyPath, 'utf8'), readFile(certPath, 'utf8')])
    new X509Certificate(cert)
    return { key, cert }
  } catch {
    // none yet, or unreadable: a new one (clients learn its fingerprint from the next state the host sends)
  }
  const now = Date.now()
  const made = await generate([{ name: 'commonName', value: 'neuron-host' }], {
    keyType: 'ec',
    curve: 'P-256',
    notBeforeDate: new Date(now - 86_400_000),
    notAfterDate: new Date(now + VALID_DAYS * 86_400_000),
  })
  await mkdir(dir, { recursive: true, mode: 0o700 })
  // the key first and each file renamed into place whole: a crash leaves the old pair or none, never half of one
  for (const [path, text] of [
    [keyPath, made.private],
    [certPath, made.cert],
  ] as const) {
    await writeFile(`${path}.tmp`, text, { mode: 0o600 })
    await rename(`${path}.tmp`, path)
  }
  return { key: made.private, cert: made.cert }
}
