// A self-signed certificate for loopback, made by the openssl CLI, for tests of https:// and wss://.
// Tests trust it through an explicit CA option (or NODE_EXTRA_CA_CERTS for a child process), never by
// turning verification off.
import { execFile, execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

export const HAVE_OPENSSL = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
/** Appended to the names of suites that need openssl, so a skip says why. */
export const NEEDS_OPENSSL = HAVE_OPENSSL ? '' : ' (skipped: no openssl on PATH to make a certificate)'

export interface TestCertificate {
  readonly keyPath: string
  readonly certPath: string
  /** PEM. */
  readonly key: string
  /** PEM; being self-signed, it is also the CA to trust. */
  readonly cert: string
}

/** A P-256 key and a one-day self-signed certificate naming 127.0.0.1 and localhost, written to `dir`. */
export async function selfSignedCertificate(dir: string, name = 'loopback'): Promise<TestCertificate> {
  const keyPath = join(dir, `${name}-key.pem`)
  const certPath = join(dir, `${name}-cert.pem`)
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    certPath,
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ])
  return { keyPath, certPath, key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8') }
}
