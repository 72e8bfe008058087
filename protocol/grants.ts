import { z } from 'zod'
import { Count } from './manifest'

/**
 * Leading zero bits a new key's grant proof needs by default: 2^20 sha256 tries on average, 1.4 s of one busy core in
 * Node (bench/grant-work.ts: 0.78 M tries/s at load 3.5 on 2 cores), about a second on an idle one.
 */
export const DEFAULT_GRANT_WORK_BITS = 20
/** New-key grants one network prefix (IPv4 /24, IPv6 /48) may take per day, by default. */
export const DEFAULT_GRANTS_PER_PREFIX_PER_DAY = 16
/** How long a grant challenge may be answered after it is issued (ms). */
export const GRANT_CHALLENGE_TTL_MS = 5 * 60_000
/** Most bits a tracker may ask: past this an honest client would work for days. */
export const MAX_GRANT_WORK_BITS = 40

/** `grant.<expiresAt>.<random>`: issued by the tracker, spent by one claim. */
export const GrantChallengeId = z
  .string()
  .regex(/^grant\.\d{1,16}\.[A-Za-z0-9_-]{16,64}$/, 'a grant challenge is grant.<expiresAt>.<random>')

/** The tracker's puzzle: find `nonce` so that sha256(challenge ‖ publicKey ‖ nonce) starts with `bits` zero bits. */
export const GrantChallenge = z.object({
  challenge: GrantChallengeId,
  bits: z.number().int().min(0).max(MAX_GRANT_WORK_BITS),
  expiresAt: z.number().int().nonnegative(),
  /** What the claim opens the key's account with. */
  grantMicro: Count,
})
export type GrantChallenge = z.infer<typeof GrantChallenge>

export const GrantClaim = z.object({
  challenge: GrantChallengeId,
  /** The nonce found, as the client wrote it (up to 32 characters). */
  nonce: z.string().min(1).max(32),
})
export type GrantClaim = z.infer<typeof GrantClaim>

export const GrantClaimed = z.object({ accountId: z.string().max(64), grantMicro: Count })
export type GrantClaimed = z.infer<typeof GrantClaimed>

/** The bytes a grant proof hashes: the challenge, the claiming key and the nonce, joined by newlines. */
export function grantWorkMessage(challenge: string, publicKey: string, nonce: string): string {
  return `${challenge}\n${publicKey}\n${nonce}`
}

/** Leading zero bits of `digest`. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8
      continue
    }
    return bits + Math.clz32(byte) - 24
  }
  return bits
}
