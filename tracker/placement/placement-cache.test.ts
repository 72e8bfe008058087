import { describe, expect, it } from 'vitest'
import { estimateFromConfig } from '../../gguf/config-manifest'
import { type BlockCache, KV_BUDGET, MEMORY_SHARE } from '../../protocol'
import { DEEPSEEK_V3, QWEN3_30B_A3B } from '../../test/model-configs'
import { planRoute } from '../routing/route-planner'
import { NO_LATENCIES, type ServedSpan } from '../routing/swarm-view'
import { previewPlacement } from './placement'
import type { JoiningHost, PlacementModel, PlacementProposal } from './types'

/** A home computer with 16 GB free: placement plans with the default share of it. */
const HOST_16GB: JoiningHost = {
  freeMemoryBytes: MEMORY_SHARE * 16e9,
  freeDiskBytes: 1e12,
  msPerBlock: 10,
  relay: false,
}
const OPTIONS = { kvBudgetTokens: KV_BUDGET.tokens, kvBudgetSessions: KV_BUDGET.sessions }

/** Hosts join an empty swarm one by one, each taking the range placement proposes, until a route covers every block. */
function hostsUntilRoute(model: PlacementModel): { proposals: PlacementProposal[]; hops: number } {
  const spans: ServedSpan[] = []
  const proposals: PlacementProposal[] = []
  const covered = () => planRoute({ nBlocks: model.nLayer, spans, latency: NO_LATENCIES }, { tokens: 100 })
  for (;;) {
    try {
      return { proposals, hops: covered().hops.length }
    } catch {
      const { decision } = previewPlacement(
        { nBlocks: model.nLayer, spans, latency: NO_LATENCIES },
        model,
        HOST_16GB,
        OPTIONS,
      )
      if (!decision.serve) throw new Error(decision.reason)
      proposals.push(decision.proposal)
      spans.push(readySpan(`host-${spans.length}`, decision.proposal.blocks))
      if (spans.length > model.nLayer) throw new Error('placement never completed a route')
    }
  }
}

/** A ready host at 10 ms per block on `blocks`, idle, with full reputation. */
function readySpan(hostId: string, blocks: readonly [number, number]): ServedSpan {
  return {
    hostId,
    blocks,
    msPerBlock: 10,
    relay: false,
    activeSessions: 0,
    maxSessions: 4,
    kvFreeTokens: 8192,
    reputation: 1,
    status: 'ready',
  }
}

describe('placement reads each block’s cache cost from the manifest', () => {
  it('Qwen3-30B-A3B at Q4_K_M from its config: a route needs two 16 GB hosts', () => {
    const model = estimateFromConfig(QWEN3_30B_A3B, 'Qwen3-30B-A3B')
    // Per block: 351.4 MB or 403.6 MB of weights, and 4 KV heads × (128 + 128) × 2 bytes = 2 KiB per token.
    const kvPerBlock = 4 * (128 + 128) * 2 * KV_BUDGET.tokens
    expect(kvPerBlock).toBe(16 * 2 ** 20)
    const small = 351_421_440 + kvPerBlock
    const big = 403_596_288 + kvPerBlock
    // By hand: 12.8 GB usable. From block 0: the embedding (175.0 MB), blocks 0–5 (big), then per three blocks
    // two small and one big; blocks 0..31 take 12.69 GB and block 32 (big) would pass 12.8 GB.
    const embed = 175_030_272
    const first = embed + 6 * big + 8 * (2 * small + big) + 2 * small
    expect(first).toBeLessThanOrEqual(HOST_16GB.freeMemoryBytes)
    expect(first + big).toBeGreaterThan(HOST_16GB.freeMemoryBytes)
    // The other 16 blocks (7 small, 9 big) and the head (255.3 MB) fit a second host: 6.9 GB.
    const second = 7 * small + 9 * big + 255_260_672
    expect(second).toBeLessThanOrEqual(HOST_16GB.freeMemoryBytes)

    // Placement sizes ranges exactly so: next to a host on [32, 48) a 16 GB host gets [0, 32); next to one on [0, 32)
    // it covers the rest through the head (reaching back as far as its memory allows, to share the load).
    const joining = (served: [number, number]) => {
      const span = readySpan('other', served)
      const { decision } = previewPlacement(
        { nBlocks: 48, spans: [span], latency: NO_LATENCIES },
        model,
        HOST_16GB,
        OPTIONS,
      )
      if (!decision.serve) throw new Error(decision.reason)
      return decision.proposal
    }
    expect(joining([32, 48])).toMatchObject({ blocks: [0, 32], memoryBytes: first })
    const rest = joining([0, 32])
    expect(rest.blocks[0]).toBeLessThanOrEqual(32)
    expect(rest.blocks[1]).toBe(48)
    // Hosts joining an empty swarm one by one: the route that first covers every block has two hops.
    const { proposals, hops } = hostsUntilRoute(model)
    expect(hops).toBe(2)
    for (const p of proposals) {
      const n = p.blocks[1] - p.blocks[0]
      expect(p.cacheBytes).toBe(n * kvPerBlock)
      expect(p.cacheBytesPerToken).toBe(n * 2048)
      expect(p.memoryBytes).toBeLessThanOrEqual(HOST_16GB.freeMemoryBytes)
    }
  })

  it('fits fewer blocks on a host when the manifest states a higher KV cost per block', () => {
    const model = estimateFromConfig(QWEN3_30B_A3B, 'Qwen3-30B-A3B')
    const blocksOn = (cachePerBlock: BlockCache[]) => {
      const { decision } = previewPlacement(
        { nBlocks: 48, spans: [], latency: NO_LATENCIES },
        { ...model, cachePerBlock },
        HOST_16GB,
        OPTIONS,
      )
      if (!decision.serve) throw new Error(decision.reason)
      return decision.proposal.blocks[1] - decision.proposal.blocks[0]
    }
    const cheap = blocksOn(Array(48).fill({ kind: 'kv', bytesPerToken: 2048 }))
    // 32 KiB per token: 256 MiB of KV per block at the budget
    const dear = blocksOn(Array(48).fill({ kind: 'kv', bytesPerToken: 32768 }))
    expect(dear).toBeLessThan(cheap)
    // The same cost on every other block as a 128-token sliding window: those blocks hold 4 × 128 + 512 tokens only.
    const windowed = blocksOn(
      Array.from({ length: 48 }, (_, i) =>
        i % 2 === 0
          ? { kind: 'window', bytesPerToken: 32768, windowTokens: 128 }
          : { kind: 'kv', bytesPerToken: 32768 },
      ),
    )
    expect(windowed).toBeGreaterThan(dear)
  })

  it(
    'DeepSeek-V3 at Q4_K_M: each MoE block (6.5–7.5 GB) takes a 16 GB host of its own; the latent cache is 9 MiB ' +
      'per block',
    () => {
      const model = estimateFromConfig(DEEPSEEK_V3, 'DeepSeek-V3')
      const latentPerBlock = (512 + 64) * 2 * KV_BUDGET.tokens
      expect(latentPerBlock).toBe(9 * 2 ** 20)
      // By hand: two MoE blocks need at least 2 × 6.48 GB = 12.96 GB > 12.8 GB, so from block 3 on one host per block
      // (58 hosts). The embedding (0.52 GB) and the three dense blocks (0.36 GB each) fit beside block 3 (6.48 GB),
      // and the head (0.76 GB) beside block 60: 58 hosts for 61 blocks.
      expect(2 * Math.min(...model.bytesPerBlock.slice(3))).toBeGreaterThan(HOST_16GB.freeMemoryBytes)
      const { proposals, hops } = hostsUntilRoute(model)
      expect(hops).toBe(58)
      expect(proposals.every((p) => p.cacheBytes === (p.blocks[1] - p.blocks[0]) * latentPerBlock)).toBe(true)
    },
  )
})
