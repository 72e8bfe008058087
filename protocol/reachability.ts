// How a host is reached across home networks: the addresses it offers, the tracker's dial-back that
// proves the host's key at each one, and the certificate fingerprint clients pin (no CA, no user step).
import { z } from 'zod'
import { MAX_NONCE_CHARS } from './limits'

/** A host name on this computer's loopback (127.0.0.0/8, ::1 with or without brackets, localhost). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  return bare === 'localhost' || bare === '::1' || bare.startsWith('127.')
}

/** Candidate endpoints one host offers: its interfaces, a mapped port on its router, and the one the tracker adds. */
export const MAX_CANDIDATES = 8
/** Where a host answers the tracker's dial-back on its data-plane port (HTTP GET, `?nonce=`). */
export const DIAL_BACK_PATH = '/.well-known/neuron-proof'

/** The sha256 of a host's TLS certificate (DER), 64 lowercase hex digits: clients pin it. */
export const CertFingerprint = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a certificate fingerprint is the sha256 of its DER, 64 hex digits')
export type CertFingerprint = z.infer<typeof CertFingerprint>

/** A host's answer at DIAL_BACK_PATH: its key and its signature of dialBackMessage. */
export const DialBackProof = z.object({
  publicKey: z.string().max(MAX_NONCE_CHARS),
  signature: z.string().max(MAX_NONCE_CHARS),
})
export type DialBackProof = z.infer<typeof DialBackProof>

/**
 * What a host signs to prove, at one address, that it holds its
 * key: it names the tracker, so no other tracker can replay it.
 */
export function dialBackMessage(trackerKey: string, nonce: string): string {
  return `neuron-dial-back\n${trackerKey}\n${nonce}`
}

/**
 * What a host signs to bind its TLS certificate to its key (sent in its state, checked by clients that know the key).
 */
export function certificateMessage(fingerprint: string): string {
  return `neuron-certificate\n${fingerprint}`
}

/** Node's `fingerprint256` (colon-separated upper-case hex) as CertFingerprint. */
export function fingerprintOf(nodeFingerprint256: string): string {
  return nodeFingerprint256.replaceAll(':', '').toLowerCase()
}
