import { createHash, randomBytes } from 'node:crypto'

/** 32 random bytes, hex: each side's contribution to the code. */
export function pairingNonce(): string {
  return randomBytes(32).toString('hex')
}

/**
 * The asked app's commitment to its nonce, sent before it sees the asker's: a man in the middle who
 * learns one nonce cannot then choose the other to make two codes match (Bluetooth's numeric comparison).
 */
export function nonceCommitment(askedKey: string, askingKey: string, askedNonce: string): string {
  return createHash('sha256').update(`neuron-pair/1 commit ${askedKey} ${askingKey} ${askedNonce}`).digest('hex')
}

/** Six digits from both keys and both nonces: the same on both screens only if each side saw the other's real key. */
export function pairingCode(askedKey: string, askingKey: string, askedNonce: string, askingNonce: string): string {
  const digest = createHash('sha256')
    .update(`neuron-pair/1 code ${askedKey} ${askingKey} ${askedNonce} ${askingNonce}`)
    .digest()
  return (digest.readBigUInt64BE(0) % 1_000_000n).toString().padStart(6, '0')
}
