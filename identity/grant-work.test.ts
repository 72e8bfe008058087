import { describe, expect, it } from 'vitest'
import { leadingZeroBits } from '../protocol'
import { hasGrantWork, solveGrantWork } from './grant-work'
import { NodeIdentity } from './keys'

describe('grant proof of work', () => {
  it('counts leading zero bits across bytes', () => {
    expect(leadingZeroBits(Uint8Array.of(0x80, 0))).toBe(0)
    expect(leadingZeroBits(Uint8Array.of(0x01))).toBe(7)
    expect(leadingZeroBits(Uint8Array.of(0, 0, 0x0f, 0xff))).toBe(20)
    expect(leadingZeroBits(Uint8Array.of(0, 0))).toBe(16)
  })

  it('finds a nonce the tracker accepts for the key it was made for, and only for that key', async () => {
    const [key, other] = [NodeIdentity.generate(), NodeIdentity.generate()]
    const challenge = `grant.${Date.now() + 60_000}.abcdefghijklmnopqrstuvwx`
    const { nonce, tries } = await solveGrantWork(challenge, key.publicKey, 12)
    expect(tries).toBeGreaterThan(0)
    expect(hasGrantWork(challenge, key.publicKey, nonce, 12)).toBe(true)
    // a proof is bound to its key and challenge: the same nonce
    // for another key or challenge passes only by chance (2^-12)
    const elsewhere = [
      hasGrantWork(challenge, other.publicKey, nonce, 12),
      hasGrantWork(`${challenge}x`, key.publicKey, nonce, 12),
    ]
    expect(elsewhere.filter(Boolean).length).toBeLessThan(2)
  })

  it('stops when its caller aborts', async () => {
    const abort = new AbortController()
    abort.abort()
    await expect(
      solveGrantWork('grant.1.abcdefghijklmnopqrstuvwx', NodeIdentity.generate().publicKey, 40, abort.signal),
    ).rejects.toMatchObject({
      code: 'aborted',
    })
  })
})
