import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type GenerateOptions, generateModel } from '../gguf/generate'
import { ShardRuntime } from '../native'
import { quantizeRows } from '../native/quantize'

/** Generated benchmark models are cached here (gitignored): they are large and deterministic. */
export const BENCH_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)), '.bench')

/** TinyLlama's shape: 22 blocks, 2048 wide, 32 heads / 4 KV heads, 5632 FFN, 32000 vocab = 1.1B parameters. */
export const LLAMA_1B = {
  arch: 'llama',
  blocks: 22,
  embd: 2048,
  heads: 32,
  kvHeads: 4,
  ff: 5632,
  vocab: 32000,
  seed: 1,
} as const

/**
 * A ~100M-parameter llama (12 blocks, 768 wide, 12 heads / 4 KV heads, 2048 FFN, 32000 vocab): compute a 2-core machine
 * runs a 3-hop chat of in seconds.
 */
export const LLAMA_100M = {
  arch: 'llama',
  blocks: 12,
  embd: 768,
  heads: 12,
  kvHeads: 4,
  ff: 2048,
  vocab: 32000,
  seed: 1,
} as const

/**
 * Qwen3-30B-A3B's block scaled to fit a small machine: its width, heads and experts (64 of its 128,
 * 8 active, 768 wide), 8 of its 48 blocks, a 32k vocabulary. About 2.4B parameters.
 */
export const QWEN3_MOE_BENCH = {
  arch: 'qwen3moe',
  blocks: 8,
  embd: 2048,
  heads: 32,
  kvHeads: 4,
  ff: 6144,
  vocab: 32000,
  experts: 64,
  expertsUsed: 8,
  expertFf: 768,
  seed: 1,
} as const

/**
 * DeepSeek-V3's block scaled down: MLA with its ranks (q 1536 → 768, kv latent 512, rope 64, nope 128),
 * a dense first block, 64 routed experts in 8 groups (4 kept, 8 active) plus one shared, 8 blocks.
 */
export const DEEPSEEK_MLA_BENCH = {
  arch: 'deepseek2',
  blocks: 8,
  embd: 2048,
  heads: 16,
  kvHeads: 1,
  ff: 5632,
  vocab: 32000,
  experts: 64,
  expertsUsed: 8,
  expertFf: 768,
  expertGroups: 8,
  groupsUsed: 4,
  sharedExperts: 1,
  denseBlocks: 1,
  qLoraRank: 768,
  kvLoraRank: 512,
  ropeDim: 64,
  nopeDim: 128,
  seed: 1,
} as const

/**
 * Qwen3.5-MoE's block (Ornith-1.0-397B's family) scaled to fit 24 GiB and a few minutes on 2 cores:
 * 16 value heads of 128 over 4 key heads (delta-net) and 4 KV heads (full attention), full attention
 * every 4th block as Ornith, 64 routed experts (8 active, 512 wide) plus a gated shared expert as wide,
 * 8 blocks, a 32k vocabulary. About 1.9B parameters (2.0 GB at q8_0).
 */
export const QWEN35_MOE_BENCH = {
  arch: 'qwen35moe',
  blocks: 8,
  embd: 2048,
  heads: 16,
  kvHeads: 4,
  ff: 512,
  vocab: 32000,
  experts: 64,
  expertsUsed: 8,
  expertFf: 512,
  fullAttentionInterval: 4,
  seed: 1,
} as const

/**
 * GLM-5.2's block scaled down: MLA with DeepSeek-V3's ranks (q 768, kv latent 512, rope 64, nope 128), a dense
 * first block, 64 routed experts (8 active) plus one shared, and the lightning indexer (8 heads of 128, top-k
 * 128 of GLM-5.2's 2048, so it bites within the bench's 192-token decode and its 512-token prefill); full
 * indexer blocks 0, 3 and 6, the other five reuse their top-k. 8 blocks, about 2.4B parameters (2.6 GB at q8_0).
 */
export const GLM_DSA_BENCH = {
  arch: 'glm-dsa',
  blocks: 8,
  embd: 2048,
  heads: 16,
  kvHeads: 1,
  ff: 5632,
  vocab: 32000,
  experts: 64,
  expertsUsed: 8,
  expertFf: 768,
  sharedExperts: 1,
  denseBlocks: 1,
  qLoraRank: 768,
  kvLoraRank: 512,
  ropeDim: 64,
  nopeDim: 128,
  indexerHeads: 8,
  indexerHeadSize: 128,
  indexerTopK: 128,
  fullIndexerInterval: 3,
  seed: 1,
} as const

/**
 * A DeepSeek-V4-Flash-like model scaled to this machine (about 1.1B parameters): four hyper-connection streams, the
 * first two blocks routing experts by token id, sliding-window blocks, then compressed blocks alternating ratio 4
 * (with the lightning indexer) and 128, 64 experts of 512 (6 used) plus a shared one, grouped low-rank output.
 */
export const DEEPSEEK4_BENCH = {
  arch: 'deepseek4',
  blocks: 8,
  embd: 1024,
  heads: 8,
  kvHeads: 1,
  ff: 2048,
  vocab: 32000,
  experts: 64,
  expertsUsed: 6,
  expertFf: 512,
  sharedExperts: 1,
  qLoraRank: 256,
  outputGroups: 4,
  outputLoraRank: 256,
  hashLayers: 2,
  compressRatios: [0, 0, 4, 128, 4, 128, 4, 128],
  slidingWindow: 128,
  indexerHeads: 8,
  indexerHeadSize: 64,
  indexerTopK: 128,
  seed: 1,
} as const

/** Path of a cached generated model, writing it first if absent. */
export async function benchModel(
  type: GenerateOptions['type'],
  shape: Omit<GenerateOptions, 'type' | 'out'> = LLAMA_1B,
): Promise<string> {
  await mkdir(BENCH_DIR, { recursive: true })
  const experts = shape.experts ? `-e${shape.experts}x${shape.expertsUsed ?? 0}` : ''
  const out = join(BENCH_DIR, `${shape.arch}-${shape.blocks}x${shape.embd}${experts}-${type}-seed${shape.seed}.gguf`)
  if (!existsSync(out)) {
    const started = performance.now()
    await generateModel({ ...shape, type, out, quantize: quantizeRows })
    console.error(`generated ${out} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  }
  return out
}

/** A small llama for machines without the cached 1.1B model (bench/audit.ts's shape). */
const SMALL_LLAMA = {
  arch: 'llama',
  blocks: 8,
  embd: 768,
  heads: 12,
  kvHeads: 4,
  ff: 2048,
  vocab: 4096,
  seed: 1,
} as const

/**
 * The model bench:batch and bench:mixed-load run: `given` (a GGUF path), else the 1.1B bench llama if cached, else a
 * small generated llama.
 */
export async function batchBenchModel(given: string): Promise<{ path: string; shape: string }> {
  if (given) return { path: given, shape: given }
  const big = join(BENCH_DIR, `llama-${LLAMA_1B.blocks}x${LLAMA_1B.embd}-q8_0-seed1.gguf`)
  if (existsSync(big)) return { path: big, shape: 'llama 1.1B q8_0' }
  return { path: await benchModel('q8_0', SMALL_LLAMA), shape: 'llama 8x768 q8_0' }
}

/** A model's every block, embedding and head in our runtime on the CPU: the "ours" side of the whole-model benches. */
export function wholeRuntime(path: string, nLayer: number, threads: number): Promise<ShardRuntime> {
  return ShardRuntime.load({ artifacts: [path], blocks: [0, nLayer], embed: true, head: true, threads, device: 'cpu' })
}
