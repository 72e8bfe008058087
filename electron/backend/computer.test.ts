import { describe, expect, it } from 'vitest'
import { KV_BUDGET, Manifest, windowCells } from '../../protocol'
import { OLD_MANIFEST } from '../../test/manifests'
import { rangeMemoryBytes } from './computer'

describe('memory a host needs for a block range', () => {
  it(
    'adds each block’s cache as the manifest states it, ' + 'and one KV figure for every block of an older manifest',
    () => {
      const old = Manifest.parse(OLD_MANIFEST)
      // block 1 alone: its weights and 128 bytes of KV per token at the budget
      expect(rangeMemoryBytes(old, [1, 2])).toBe(1000 + 128 * KV_BUDGET.tokens)
      const windowed = Manifest.parse({
        ...OLD_MANIFEST,
        cachePerBlock: [
          { kind: 'kv', bytesPerToken: 128 },
          { kind: 'window', bytesPerToken: 128, windowTokens: 128 },
          { kind: 'latent', bytesPerToken: 64 },
        ],
      })
      const windowTokens = KV_BUDGET.sessions * windowCells(128, KV_BUDGET.tokens / KV_BUDGET.sessions)
      expect(rangeMemoryBytes(windowed, [1, 3])).toBe(2000 + 128 * windowTokens + 64 * KV_BUDGET.tokens + 16384)
    },
  )
})
