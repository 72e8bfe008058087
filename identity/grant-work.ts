import { createHash } from 'node:crypto'
import { grantWorkMessage, leadingZeroBits, NeuronError } from '../protocol'

/** Tries between yields to the event loop: a few milliseconds of hashing, so a solving app stays responsive. */
const TRIES_PER_SLICE = 4096

/** Whether `nonce` answers `challenge` for `publicKey` with `bits` leading zero bits: one sha256. */
export function hasGrantWork(challenge: string, publicKey: string, nonce: string, bits: number): boolean {
  return (
    leadingZeroBits(
      createHash('sha256')
        .update(grantWorkMessage(challenge, publicKey, nonce))
        .digest(),
    ) >= bits
  )
}

/**
 * Finds a nonce for `challenge` and `publicKey` with `bits` leading zero bits: 2^bits tries on average. Yields to the
 * event loop between slices; stops with `aborted` when `signal` fires.
 */
export async function solveGrantWork(
  challenge: string,
  publicKey: string,
  bits: number,
  signal?: AbortSignal,
): Promise<{ nonce: string; tries: number }> {
  const prefix = createHash('sha256').update(grantWorkMessage(challenge, publicKey, ''))
  for (let n = 0; ; ) {
    for (const end = n + TRIES_PER_SLICE; n < end; n++) {
      const nonce = n.toString(36)
      if (leadingZeroBits(prefix.copy().update(nonce).digest()) >= bits) return { nonce, tries: n + 1 }
    }
    if (signal?.aborted) throw new NeuronError('aborted', 'the grant proof was stopped before a nonce was found.')
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}
