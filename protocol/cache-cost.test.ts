import { describe, expect, it } from 'vitest'
import { OLD_MANIFEST } from '../test/manifests'
import { blockCacheBytes, cachePerBlock, rangeCacheBytes, tokenCacheBytes, windowCells } from './cache-cost'
import { Manifest } from './manifest'

describe('cache cost per block', () => {
  it('loads a manifest from before cachePerBlock and reads its one KV figure as every block’s KV cache', () => {
    const manifest = Manifest.parse(OLD_MANIFEST)
    expect(manifest.cachePerBlock).toBeUndefined()
    expect(cachePerBlock(manifest)).toEqual([0, 1, 2].map(() => ({ kind: 'kv', bytesPerToken: 128 })))
    expect(rangeCacheBytes(manifest, [1, 3], { tokens: 1000, sessions: 4 })).toBe(2 * 128 * 1000)
  })

  it(
    'takes each block’s cost from cachePerBlock when the manifest states it, and refuses one that does not match ' +
      'the blocks',
    () => {
      const cachePerBlock = [
        { kind: 'kv', bytesPerToken: 2048 },
        { kind: 'latent', bytesPerToken: 1152 },
        { kind: 'window', bytesPerToken: 2048, windowTokens: 128 },
      ]
      const manifest = Manifest.parse({ ...OLD_MANIFEST, kvBytesPerTokenPerBlock: 2048, cachePerBlock })
      // Until the window fills, every block grows by its bytes per token.
      expect(rangeCacheBytes(manifest, [0, 3], { tokens: 100, sessions: 1 })).toBe((2048 + 1152 + 2048) * 100)
      // 8192 tokens in 4 sessions of 2048: the window block keeps,
      // per session, a ring of 128 + 512 cells rounded up to 768.
      expect(windowCells(128, 2048)).toBe(768)
      expect(rangeCacheBytes(manifest, [0, 3], { tokens: 8192, sessions: 4 })).toBe(
        2048 * 8192 + 1152 * 8192 + 2048 * 4 * 768,
      )
      expect(Manifest.safeParse({ ...OLD_MANIFEST, cachePerBlock: cachePerBlock.slice(1) }).success).toBe(false)
      expect(
        Manifest.safeParse({
          ...OLD_MANIFEST,
          cachePerBlock: [...cachePerBlock.slice(0, 2), { kind: 'window', bytesPerToken: 2048 }],
        }).success,
      ).toBe(false)
    },
  )

  it('caps a sliding window only once its sessions outgrow it, and adds fixed state per session', () => {
    const window = { kind: 'window', bytesPerToken: 100, windowTokens: 4096 } as const
    expect(blockCacheBytes(window, { tokens: 2048, sessions: 1 })).toBe(100 * 2048)
    // sessions of 50 000 positions: each keeps a ring of 4096 + 512 cells, rounded up to 4608
    expect(blockCacheBytes(window, { tokens: 100_000, sessions: 2 })).toBe(100 * 2 * 4608)
    expect(
      blockCacheBytes({ kind: 'kv', bytesPerToken: 0, fixedBytes: 1_000_000 }, { tokens: 8192, sessions: 4 }),
    ).toBe(4_000_000)
  })

  it(
    'keeps a recent window beside a growing cache (DeepSeek-V4’s raw keys beside its compressed rows), and no ' +
      'second window on a window cache',
    () => {
      const compressed = {
        kind: 'latent',
        bytesPerToken: 320,
        recent: { bytesPerToken: 1024, windowTokens: 128 },
        fixedBytes: 81_920,
      } as const
      // 4 sessions of 2048: 320 B for each of 8192 tokens, a ring of
      // 768 cells of 1 KiB per session, and the state per session.
      expect(blockCacheBytes(compressed, { tokens: 8192, sessions: 4 })).toBe(320 * 8192 + 1024 * 4 * 768 + 81_920 * 4)
      expect(tokenCacheBytes(compressed)).toBe(1344)
      expect(Manifest.safeParse({ ...OLD_MANIFEST, cachePerBlock: [compressed, compressed, compressed] }).success).toBe(
        true,
      )
      const windowWithRecent = {
        kind: 'window',
        bytesPerToken: 1024,
        windowTokens: 128,
        recent: { bytesPerToken: 1024, windowTokens: 128 },
      }
      expect(
        Manifest.safeParse({ ...OLD_MANIFEST, cachePerBlock: [compressed, compressed, windowWithRecent] }).success,
      ).toBe(false)
    },
  )
})
