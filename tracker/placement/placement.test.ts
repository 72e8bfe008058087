import { describe, expect, it } from 'vitest'
import { type BlockRange, NeuronError } from '../../protocol'
import { NO_LATENCIES, type ServedSpan, type SwarmView } from '../routing/swarm-view'
import { planPlacement, previewPlacement } from './placement'
import type { JoiningHost, PlacementDecision, PlacementModel } from './types'

const GB = 1e9
const KV_TOKENS = 4096

function host(hostId: string, blocks: BlockRange, msPerBlock: number, more: Partial<ServedSpan> = {}): ServedSpan {
  return {
    hostId,
    blocks,
    msPerBlock,
    relay: false,
    activeSessions: 0,
    maxSessions: 8,
    kvFreeTokens: 8192,
    reputation: 0.9,
    status: 'ready',
    ...more,
  }
}

function swarm(nBlocks: number, spans: ServedSpan[]): SwarmView {
  return { nBlocks, spans, latency: NO_LATENCIES }
}

/**
 * 1 GB per block and 64 KiB of KV per token per block: 4096 tokens
 * of KV is 0.27 GB per block, so a block costs 1.27 GB of memory.
 */
function model(nLayer: number, more: Partial<PlacementModel> = {}): PlacementModel {
  return { nLayer, nEmbd: 4096, bytesPerBlock: Array(nLayer).fill(GB), kvBytesPerTokenPerBlock: 65_536, ...more }
}
const BLOCK_MEMORY = GB + KV_TOKENS * 65_536

/** A host whose memory holds exactly `blocks` blocks with their KV budget. */
function joining(blocks: number, more: Partial<JoiningHost> = {}): JoiningHost {
  return {
    freeMemoryBytes: blocks * BLOCK_MEMORY + 1000,
    freeDiskBytes: 1000 * GB,
    msPerBlock: 10,
    relay: false,
    ...more,
  }
}

function served(decision: PlacementDecision): BlockRange {
  if (!decision.serve) throw new Error(`expected a range, got refused: ${decision.reason}`)
  return decision.proposal.blocks
}

describe('planPlacement', () => {
  it('fills the gap in a swarm of three hosts', () => {
    const view = swarm(8, [host('a', [0, 2], 10), host('b', [2, 4], 10), host('c', [6, 8], 10)])
    expect(served(planPlacement(view, model(8), joining(2), { kvBudgetTokens: KV_TOKENS }))).toEqual([4, 6])
  })

  it('reinforces the weakest blocks when every block is served', () => {
    // Blocks 3..5 are served by one slow host only: the fewest tokens/s in the swarm.
    const view = swarm(8, [
      host('fast-a', [0, 3], 5),
      host('fast-b', [5, 8], 5),
      host('slow', [3, 5], 40),
      host('fast-c', [0, 8], 5),
    ])
    expect(served(planPlacement(view, model(8), joining(2), { kvBudgetTokens: KV_TOKENS }))).toEqual([3, 5])
  })

  it('with twins, gives blocks a single host serves a second one before raising the weakest blocks', () => {
    // Blocks 0..3 have two slow hosts (the weakest blocks, 50 tokens/s);
    // blocks 4..7 one fast host (250), which no audit can compare.
    const view = swarm(8, [host('slow-a', [0, 4], 10), host('slow-b', [0, 4], 10), host('fast', [4, 8], 1)])
    expect(served(planPlacement(view, model(8), joining(4), { kvBudgetTokens: KV_TOKENS }))).toEqual([0, 4])
    expect(served(planPlacement(view, model(8), joining(4), { kvBudgetTokens: KV_TOKENS, twins: true }))).toEqual([
      4, 8,
    ])
    // with a gap, the gap first either way
    const gap = swarm(8, [host('slow-a', [0, 4], 10), host('fast', [4, 6], 1)])
    expect(served(planPlacement(gap, model(8), joining(2), { kvBudgetTokens: KV_TOKENS, twins: true }))).toEqual([6, 8])
  })

  it('sizes the range to free memory (weights + KV budget) and reports what it needs', () => {
    const preview = previewPlacement(swarm(12, []), model(12), joining(5), { kvBudgetTokens: KV_TOKENS })
    if (!preview.decision.serve) throw new Error(preview.decision.reason)
    const { proposal } = preview.decision
    expect(proposal.blocks[1] - proposal.blocks[0]).toBe(5)
    expect(proposal.memoryBytes).toBe(5 * BLOCK_MEMORY)
    expect(proposal.bytesToDownload).toBe(5 * GB)
    // 10 ms per block over 5 blocks: one token every 50 ms.
    expect(proposal.expectedTokensPerSecond).toBe(20)
    // A smaller KV budget fits more blocks in the same memory.
    const roomier = planPlacement(swarm(12, []), model(12), joining(5), { kvBudgetTokens: 0 })
    expect(served(roomier)[1] - served(roomier)[0]).toBe(6)
  })

  it('counts whole artifacts to download, with the embed on the first hop and the head on the last', () => {
    const withArtifacts = model(4, {
      artifacts: [
        { role: 'embed', blocks: null, bytes: 0.5 * GB },
        { role: 'blocks', blocks: [0, 2], bytes: 2 * GB },
        { role: 'blocks', blocks: [2, 4], bytes: 2 * GB },
        { role: 'head', blocks: null, bytes: 0.5 * GB },
      ],
    })
    const view = swarm(4, [host('a', [0, 3], 10)])
    const preview = previewPlacement(view, withArtifacts, joining(1.5), { kvBudgetTokens: KV_TOKENS })
    if (!preview.decision.serve) throw new Error(preview.decision.reason)
    // Block 3 is the gap; serving it means fetching the whole [2,
    // 4) artifact and the head, and holding the head in memory.
    expect(preview.decision.proposal.blocks).toEqual([3, 4])
    expect(preview.decision.proposal.bytesToDownload).toBe(2.5 * GB)
    expect(preview.decision.proposal.memoryBytes).toBe(BLOCK_MEMORY + 0.5 * GB)
  })

  it('shrinks the range to the free disk', () => {
    const decision = planPlacement(swarm(10, []), model(10), joining(8, { freeDiskBytes: 3.5 * GB }), {
      kvBudgetTokens: KV_TOKENS,
    })
    expect(served(decision)[1] - served(decision)[0]).toBe(3)
  })

  it('refuses a host whose memory holds no block, with the numbers', () => {
    const decision = planPlacement(swarm(4, []), model(4), joining(0.5), { kvBudgetTokens: KV_TOKENS })
    expect(decision.serve).toBe(false)
    if (decision.serve) return
    expect(decision.code).toBe('too_little_memory')
    expect(decision.reason).toContain('0.63 GB of free memory holds no block')
    expect(decision.reason).toContain('1.27 GB')
    expect(decision.details).toMatchObject({ neededBytes: BLOCK_MEMORY, kvBudgetTokens: KV_TOKENS })
  })

  it('quotes the long-context cache at the model’s context length when it is under 128K', () => {
    const short = previewPlacement(swarm(4, []), model(4, { contextLength: 2048 }), joining(4), {
      kvBudgetTokens: KV_TOKENS,
    })
    if (!short.decision.serve) throw new Error('expected a proposal')
    expect(short.decision.proposal.longContextTokens).toBe(2048)
    expect(short.decision.proposal.longContextCacheBytes).toBe(4 * 2048 * 65_536)
    const long = previewPlacement(swarm(4, []), model(4), joining(4), { kvBudgetTokens: KV_TOKENS })
    if (!long.decision.serve) throw new Error('expected a proposal')
    expect(long.decision.proposal.longContextTokens).toBe(131_072)
  })

  it('states a few MB of memory in MB, never as "0.00 GB"', () => {
    const decision = planPlacement(swarm(4, []), model(4), joining(0, { freeMemoryBytes: 1_000_000 }), {
      kvBudgetTokens: KV_TOKENS,
    })
    if (decision.serve) throw new Error('expected a refusal')
    expect(decision.reason).toContain('1.0 MB of free memory holds no block')
    expect(decision.reason).not.toContain('0.00 GB')
  })

  it('refuses a host with too little disk for any artifact', () => {
    const decision = planPlacement(swarm(4, []), model(4), joining(4, { freeDiskBytes: 0.2 * GB }), {
      kvBudgetTokens: KV_TOKENS,
    })
    expect(decision.serve).toBe(false)
    if (!decision.serve) expect(decision.code).toBe('too_little_disk')
  })

  it('refuses a host so slow that every route through it is more than twice the best route', () => {
    const view = swarm(8, [host('a', [0, 8], 2), host('b', [0, 4], 2), host('c', [4, 8], 2)])
    // Best route: 8 blocks × 2 ms + 2 links × 40 ms = 96 ms. One
    // block at 500 ms already makes any route through it > 192 ms.
    const decision = planPlacement(view, model(8), joining(4, { msPerBlock: 500 }), { kvBudgetTokens: KV_TOKENS })
    expect(decision.serve).toBe(false)
    if (decision.serve) return
    expect(decision.code).toBe('too_slow')
    expect(decision.details).toMatchObject({ bestRouteMsPerToken: 96, maxSlowdown: 2 })
    expect(decision.reason).toContain('500 ms per block')
  })

  it('gives a slow-but-useful host a shorter range so routes through it stay within the limit', () => {
    const view = swarm(8, [host('a', [0, 8], 2), host('b', [0, 4], 2), host('c', [4, 8], 2)])
    // At 20 ms per block, 4 blocks would cost 2 links + 80 ms more
    // than the best 96 ms route: too slow; 2 blocks are fine.
    const decision = planPlacement(view, model(8), joining(4, { msPerBlock: 20 }), { kvBudgetTokens: KV_TOKENS })
    const [a, b] = served(decision)
    expect(b - a).toBeLessThan(4)
    if (decision.serve) expect(decision.proposal.bestRouteMsPerToken).toBeLessThanOrEqual(2 * 96)
  })

  it('welcomes even a slow host while the swarm has a gap', () => {
    const view = swarm(8, [host('a', [0, 6], 2)])
    expect(
      served(planPlacement(view, model(8), joining(2, { msPerBlock: 500 }), { kvBudgetTokens: KV_TOKENS })),
    ).toEqual([6, 8])
  })

  it('previews coverage before and after, and offers alternatives including a smaller range', () => {
    const view = swarm(6, [host('a', [0, 6], 10), host('b', [0, 2], 10), host('c', [4, 6], 10)])
    const preview = previewPlacement(view, model(6), joining(4), { kvBudgetTokens: KV_TOKENS })
    if (!preview.decision.serve) throw new Error(preview.decision.reason)
    // [0, 4), [1, 5) and [2, 6) all lift blocks 2..3 equally; the lowest start wins, the others are the alternatives.
    expect(preview.decision.proposal.blocks).toEqual([0, 4])
    // Blocks 2..3 are served by host a alone: 1000 / (10 × 6) tokens/s.
    expect(preview.swarmTokensPerSecond).toBeCloseTo(1000 / 60, 9)
    expect(preview.coverage.map((c) => c.before.hosts)).toEqual([2, 2, 1, 1, 2, 2])
    expect(preview.coverage.map((c) => c.after.hosts)).toEqual([3, 3, 2, 2, 2, 2])
    expect(preview.coverage[2]?.after.tokensPerSecond).toBeCloseTo(1000 / 60 + 1000 / 40, 9)
    expect(preview.decision.proposal.swarmTokensPerSecond).toBeCloseTo(1000 / 60 + 1000 / 40, 9)
    const smaller = preview.alternatives.find((alt) => alt.why.startsWith('smaller range'))
    expect(smaller?.blocks).toEqual([2, 4])
    expect(smaller?.expectedTokensPerSecond).toBe(50)
    expect(preview.alternatives.filter((alt) => alt.why.startsWith('next-best')).map((alt) => alt.blocks)).toEqual([
      [1, 5],
      [2, 6],
    ])
  })

  it('ignores draining hosts and the joining host’s own current span', () => {
    const view = swarm(4, [
      host('a', [0, 2], 10),
      host('leaving', [2, 4], 10, { status: 'draining' }),
      host('me', [0, 2], 10),
    ])
    expect(served(planPlacement(view, model(4), joining(2, { hostId: 'me' }), { kvBudgetTokens: KV_TOKENS }))).toEqual([
      2, 4,
    ])
  })

  it('proposes the same range whatever order the registry lists hosts in', () => {
    const spans = [host('a', [0, 3], 10), host('b', [3, 6], 12), host('c', [1, 4], 8), host('d', [2, 6], 9)]
    const first = previewPlacement(swarm(6, spans), model(6), joining(2), { kvBudgetTokens: KV_TOKENS })
    const again = previewPlacement(swarm(6, [...spans].reverse()), model(6), joining(2), { kvBudgetTokens: KV_TOKENS })
    expect(again).toEqual(first)
  })

  it('rejects a manifest that does not match the swarm', () => {
    expect(() => planPlacement(swarm(6, []), model(4), joining(2), { kvBudgetTokens: KV_TOKENS })).toThrow(NeuronError)
    expect(() => planPlacement(swarm(6, []), model(4), joining(2), { kvBudgetTokens: KV_TOKENS })).toThrow(
      /4 blocks .* swarm view has 6/,
    )
  })
})
