import { describe, expect, it } from 'vitest'
import { estimateFromConfig } from '../../gguf/config-manifest'
import { KV_BUDGET, LONG_CONTEXT, MEMORY_SHARE } from '../../protocol'
import { DEEPSEEK_V4_FLASH, GLM_5_2, ORNITH_1_0_397B } from '../../test/model-configs'
import { planRoute } from '../routing/route-planner'
import { NO_LATENCIES, type ServedSpan } from '../routing/swarm-view'
import { previewPlacement } from './placement'
import { hostsPerRoute, servingPreview } from './route-size'

/** 12 GB usable: a host with 15 GB free, of which placement plans MEMORY_SHARE. */
const USABLE = MEMORY_SHARE * 15e9
const OPTIONS = { kvBudgetTokens: KV_BUDGET.tokens, kvBudgetSessions: KV_BUDGET.sessions }
// Q4_K stores 256 weights in 144 bytes, Q6_K in 210.
const q4 = (n: number) => (n / 256) * 144
const q6 = (n: number) => (n / 256) * 210
/** llama.cpp's use_more_bits: these blocks' ffn_down (and attn_v) get Q6_K at Q4_K_M. */
const moreBits = (layer: number, n: number) =>
  layer < Math.floor(n / 8) || layer >= Math.floor((7 * n) / 8) || (layer - Math.floor(n / 8)) % 3 === 2

/**
 * The experts decide a block's size: gate and up at Q4_K, down at Q6_K on the use_more_bits blocks, within `rest`
 * bytes of that (attention, shared expert, router, norms; gguf/config-targets.test.ts checks every tensor).
 */
function expertBound(expertWeights: number, nLayer: number, il: number): number {
  return 2 * q4(expertWeights) + (moreBits(il, nLayer) ? q6 : q4)(expertWeights)
}

/**
 * Hosts of USABLE each join an empty swarm one by one, each taking
 * the range placement proposes, until a route covers every block.
 */
function hopsOnceServed(model: Parameters<typeof previewPlacement>[1], usable = USABLE): number {
  const spans: ServedSpan[] = []
  for (;;) {
    const view = { nBlocks: model.nLayer, spans, latency: NO_LATENCIES }
    try {
      return planRoute(view, { tokens: 100 }).hops.length
    } catch {
      const { decision } = previewPlacement(
        view,
        model,
        { freeMemoryBytes: usable, freeDiskBytes: 1e12, msPerBlock: 10, relay: false },
        OPTIONS,
      )
      if (!decision.serve) throw new Error(decision.reason)
      const hostId = `host-${spans.length}`
      spans.push({
        hostId,
        blocks: decision.proposal.blocks,
        msPerBlock: 10,
        relay: false,
        activeSessions: 0,
        maxSessions: 4,
        kvFreeTokens: 8192,
        reputation: 1,
        status: 'ready',
      })
      if (spans.length > model.nLayer) throw new Error('placement never completed a route')
    }
  }
}

describe('hosts per route at 12 GB usable, by hand from the config numbers', () => {
  it(
    'DeepSeek-V4-Flash: 16 hosts of 2–3 blocks; 32 KiB per token across each cut; 7 KiB of cache per token ' +
      'at 128K',
    () => {
      const model = estimateFromConfig(DEEPSEEK_V4_FLASH, 'DeepSeek-V4-Flash')
      const { hidden_size: E, moe_intermediate_size: F, n_routed_experts: X } = DEEPSEEK_V4_FLASH
      // Experts of 4096 × 2048 × 256: 3.62 GB a block, 4.18 GB with
      // down at Q6_K; the rest is 80–100 MB, cache under 7 MB.
      model.bytesPerBlock.forEach((bytes, il) => {
        expect(bytes - expertBound(E * F * X, 43, il)).toBeGreaterThan(80e6)
        expect(bytes - expertBound(E * F * X, 43, il)).toBeLessThan(100e6)
      })
      // So a host holds three Q4 blocks (≤ 11.2 GB) or one Q6 and two Q4 (≤ 11.8 GB), never two Q6 and a Q4 (≥ 12.2
      // GB). Q6 blocks: 0–4, every third from 7 to 34, 37–42. From block 0: [0, 2) with the embedding, [2, 4), [4, 7)
      // (one Q6, two Q4), then ten of [7, 10) … [34, 37), then [37,
      // 39), [39, 41), [41, 43) with the head: 3 + 10 + 3 = 16.
      const ranges = hostsPerRoute(model, USABLE, KV_BUDGET)
      expect(ranges?.length).toBe(16)
      expect(ranges?.slice(0, 4)).toEqual([
        [0, 2],
        [2, 4],
        [4, 7],
        [7, 10],
      ])
      expect(hopsOnceServed(model)).toBe(16)
      // 4 × 4096 f16 values, and a token id before blocks 1 and 2. At 128K: two window blocks of 768 cells × 1 KiB, 21
      // ratio-4 blocks of 320 B per token + the window + 81 920 B of
      // state, 20 ratio-128 blocks of 8 B + the window + 512 KiB.
      const preview = servingPreview(model, USABLE)
      expect(preview.seamBytesPerToken).toEqual({ min: 32768, max: 32772 })
      const window = 1024 * 768
      expect(preview.longContextCacheBytes).toBe(
        2 * window +
          21 * (320 * LONG_CONTEXT.tokens + window + 81920) +
          20 * (8 * LONG_CONTEXT.tokens + window + 524288),
      )
      expect(Math.round(preview.longContextCacheBytes / LONG_CONTEXT.tokens)).toBe(7231)
    },
  )

  it('DeepSeek-V4-Flash at 16 GB usable: 12 hosts, most of four blocks', () => {
    const model = estimateFromConfig(DEEPSEEK_V4_FLASH, 'DeepSeek-V4-Flash')
    // 16 GB = 14.90 GiB. Blocks are 3.45 GiB at Q4 and 3.97 GiB with down at Q6 (above), cache at the budget ≤ 3.4 MiB
    // each. [0, 3): three Q6 blocks and the embedding, 12.2 GiB (a fourth Q6 would make 16.2). Then four blocks a host:
    // two Q6 and two Q4 are 14.87 GiB, one Q6 and three Q4 14.35 GiB, from [3, 7) to [35, 39). The last four blocks are
    // Q6 and the head is 0.40 GiB: [39, 42) and [42, 43) with the head. 1 + 9 + 2 = 12.
    const usable = 16e9
    const ranges = hostsPerRoute(model, usable, KV_BUDGET)
    expect(ranges).toEqual([[0, 3], ...Array.from({ length: 9 }, (_, i) => [3 + 4 * i, 7 + 4 * i]), [39, 42], [42, 43]])
    expect(hopsOnceServed(model, usable)).toBe(12)
  })

  it(
    'GLM-5.2: 45 hosts, one Q6 block or two others each; 12 KiB per token across a cut, 20 KiB before a ' +
      'shared-indexer block',
    () => {
      const model = estimateFromConfig(GLM_5_2, 'GLM-5.2')
      const { hidden_size: E, moe_intermediate_size: F, n_routed_experts: X } = GLM_5_2
      // MoE blocks: experts of 6144 × 2048 × 256, 5.44 GB or 6.27 GB with
      // down at Q6_K, plus 115–130 MB; dense blocks 0–2 are 0.25 GB.
      expect(model.bytesPerBlock.slice(0, 3).every((bytes) => bytes < 0.25e9)).toBe(true)
      model.bytesPerBlock.slice(3).forEach((bytes, i) => {
        expect(bytes - expertBound(E * F * X, 78, i + 3)).toBeGreaterThan(115e6)
        expect(bytes - expertBound(E * F * X, 78, i + 3)).toBeLessThan(130e6)
      })
      // Two Q6 blocks (≥ 12.78 GB) never share a host; a Q4 and a Q6 just do (≤ 11.97 GB + 21 MB of cache < 12 GB), and
      // two Q4. Q6 blocks: 3–8, every third from 11 to 65, 68–77. From block 0: the embedding, the three dense blocks
      // and block 3; then 4, 5, 6, 7 alone; [8, 10); 29 pairs from 10 to 68
      // (never two Q6 side by side there); 68–77 alone: 1 + 4 + 1 + 29 + 10.
      const ranges = hostsPerRoute(model, USABLE, KV_BUDGET)
      expect(ranges?.length).toBe(45)
      expect(ranges?.[0]).toEqual([0, 4])
      expect(ranges?.[5]).toEqual([8, 10])
      const preview = servingPreview(model, USABLE)
      expect(preview.seamBytesPerToken).toEqual({ min: 6144 * 2, max: 6144 * 2 + 2048 * 4 })
      // 21 full blocks of 1408 B per token, 57 shared of 1152
      expect(preview.longContextCacheBytes).toBe((21 * 1408 + 57 * 1152) * LONG_CONTEXT.tokens)
    },
  )

  it('Ornith-1.0-397B: 23 hosts of 1–3 blocks; 8 KiB per token across a cut; 31 KiB of cache per token at 128K', () => {
    const model = estimateFromConfig(ORNITH_1_0_397B, 'Ornith-1.0-397B')
    const { hidden_size: E, moe_intermediate_size: F, num_experts: X } = ORNITH_1_0_397B
    // Experts of 4096 × 1024 × 512: 3.62 GB a block, 4.18 GB with down at Q6_K, plus 70–100 MB; cache under 18 MB.
    model.bytesPerBlock.forEach((bytes, il) => {
      expect(bytes - expertBound(E * F * X, 60, il)).toBeGreaterThan(70e6)
      expect(bytes - expertBound(E * F * X, 60, il)).toBeLessThan(100e6)
    })
    // As DeepSeek-V4-Flash: three Q4, or one Q6 and two Q4, never two Q6 and a Q4. Q6 blocks: 0–6, every third from 9
    // to 51, 52–59. From 0: [0, 2), [2, 4), [4, 6); fifteen of [6, 9) … [48, 51); the nine Q6 blocks 51–59 in pairs: 5.
    const ranges = hostsPerRoute(model, USABLE, KV_BUDGET)
    expect(ranges?.length).toBe(3 + 15 + 5)
    expect(hopsOnceServed(model)).toBe(23)
    const preview = servingPreview(model, USABLE)
    expect(preview.seamBytesPerToken).toEqual({ min: 8192, max: 8192 })
    // 15 attention blocks of 2 KiB per token; 45 linear blocks of 4 341 760 B per session
    expect(preview.longContextCacheBytes).toBe(15 * 2048 * LONG_CONTEXT.tokens + 45 * 4_341_760)
  })

  it('counts no route when a block fits no host, and cuts only where the manifest allows', () => {
    const model = { nLayer: 4, nEmbd: 64, bytesPerBlock: [4e9, 4e9, 4e9, 4e9], kvBytesPerTokenPerBlock: 0 }
    expect(hostsPerRoute(model, 8e9, KV_BUDGET)).toEqual([
      [0, 2],
      [2, 4],
    ])
    const seams = [true, false, true].map((cut) => ({ cut, values: 64, tokenIds: false, int32PerToken: 0 }))
    // Boundary 2 forbidden: [0, 1), [1, 3), [3, 4)
    expect(hostsPerRoute({ ...model, seams }, 8e9, KV_BUDGET)).toEqual([
      [0, 1],
      [1, 3],
      [3, 4],
    ])
    expect(hostsPerRoute(model, 3e9, KV_BUDGET)).toBeUndefined()
    expect(servingPreview(model, 3e9).ranges).toBeNull()
  })
})
