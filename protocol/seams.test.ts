import { describe, expect, it } from 'vitest'
import { OLD_MANIFEST } from '../test/manifests'
import { Manifest } from './manifest'
import { allowedCuts, cutAllowed, type Seam, seamBytesPerToken } from './seams'

const hidden = (cut = true): Seam => ({ cut, values: 64, tokenIds: false, int32PerToken: 0 })

describe('seams between blocks', () => {
  it('reads a manifest from before seams as every cut allowed, with the hidden state alone crossing', () => {
    const manifest = Manifest.parse(OLD_MANIFEST)
    expect(manifest.seams).toBeUndefined()
    expect([0, 1, 2, 3].map((b) => cutAllowed(manifest, b))).toEqual([true, true, true, true])
    expect([...allowedCuts(manifest)]).toEqual([1, 1, 1, 1])
    // 64 values per token: 128 bytes at f16, 256 at f32
    expect(seamBytesPerToken(manifest, 1)).toBe(128)
    expect(seamBytesPerToken(manifest, 2, 'f32')).toBe(256)
  })

  it(
    'counts streams, token ids and extra int32 per token, and never allows a cut outside the model or inside a ' +
      'forbidden boundary',
    () => {
      const seams: Seam[] = [
        { cut: true, values: 4 * 64, tokenIds: true, int32PerToken: 0 },
        { cut: false, values: 64, tokenIds: false, int32PerToken: 2048 },
      ]
      const manifest = Manifest.parse({ ...OLD_MANIFEST, seams })
      // 4 streams of 64 f16 values plus one int32 token id; 64 f16 values plus 2048 int32 indices
      expect(seamBytesPerToken(manifest, 1)).toBe(4 * 64 * 2 + 4)
      expect(seamBytesPerToken(manifest, 2)).toBe(64 * 2 + 2048 * 4)
      expect([...allowedCuts(manifest)]).toEqual([1, 1, 0, 1])
      expect([-1, 4, 1.5].map((b) => cutAllowed(manifest, b))).toEqual([false, false, false])
    },
  )

  it('refuses seams that do not describe every boundary between the blocks', () => {
    expect(Manifest.safeParse({ ...OLD_MANIFEST, seams: [hidden()] }).success).toBe(false)
    expect(Manifest.safeParse({ ...OLD_MANIFEST, seams: [hidden(), hidden(), hidden()] }).success).toBe(false)
    expect(Manifest.safeParse({ ...OLD_MANIFEST, seams: [hidden(), { ...hidden(), values: 0 }] }).success).toBe(false)
    expect(Manifest.safeParse({ ...OLD_MANIFEST, seams: [hidden(), hidden(false)] }).success).toBe(true)
  })
})
