import { describe, expect, it } from 'vitest'
import type { Limits, PlacementProposal } from '../../protocol'
import { TEST_PROFILE } from '../../test/peers'
import { blameMemoryLimit, formatSize } from './preview'

const refused: PlacementProposal = {
  modelId: 'stories260K',
  proposal: null,
  refusal: {
    code: 'too_little_memory',
    reason: '0.00 GB of free memory holds no block; free memory',
    neededBytes: 2_400_000,
  },
  swarmTokensPerSecond: 0,
  coverage: [],
  alternatives: [],
}
const limits = (memoryBytes: number | null): Limits => ({ diskBytes: null, memoryBytes, threads: 1, useGpu: false })

describe('a memory refusal under a memory limit', () => {
  it('names the limit in MB and what the smallest range needs, and says to raise the limit', () => {
    const reason = blameMemoryLimit(refused, TEST_PROFILE, limits(1_000_000)).refusal?.reason
    expect(reason).toBe(
      "This computer's memory limit of 1.0 MB holds no block of stories260K: its smallest range needs about 2.4 MB " +
        '(weights and KV cache); raise the memory limit in Settings',
    )
    expect(reason).not.toMatch(/0\.00 GB|free memory/)
  })

  it('leaves the tracker’s reason when the computer, not the limit, is what is short', () => {
    expect(blameMemoryLimit(refused, TEST_PROFILE, limits(null))).toBe(refused)
    expect(blameMemoryLimit(refused, TEST_PROFILE, limits(8e9))).toBe(refused)
  })

  it('formats sizes below a GB in MB', () => {
    expect(formatSize(1_000_000)).toBe('1.0 MB')
    expect(formatSize(2.5e9)).toBe('2.5 GB')
    expect(formatSize(900)).toBe('900 bytes')
  })
})
