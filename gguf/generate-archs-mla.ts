// Multi-head latent attention families, deepseek2 and glm-dsa (llama.cpp src/models/deepseek2.cpp,
// glm-dsa.cpp): a low-rank query, a latent KV cached as one MQA head, and glm-dsa's lightning indexer.
import type { GenerateOptions, MoeShape } from './generate-options'
import type { PlannedTensor } from './generate-quant'
import { type ArchKeys, bias, dense, norm } from './generate-tensors'
import type { GgufKv } from './reader'

export function mlaAttention(b: string, o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  const kHead = m.nopeDim + m.ropeDim
  return [
    norm(`${b}.attn_q_a_norm.weight`, m.qLoraRank),
    norm(`${b}.attn_kv_a_norm.weight`, m.kvLoraRank),
    dense(`${b}.attn_q_a.weight`, o.embd, m.qLoraRank),
    dense(`${b}.attn_q_b.weight`, m.qLoraRank, o.heads * kHead),
    dense(`${b}.attn_kv_a_mqa.weight`, o.embd, m.kvLoraRank + m.ropeDim),
    // MLA split the way convert_hf_to_gguf.py writes it: k_b transposed, per head
    dense(`${b}.attn_k_b.weight`, m.nopeDim, m.kvLoraRank, o.heads),
    dense(`${b}.attn_v_b.weight`, m.kvLoraRank, m.nopeDim, o.heads),
    dense(`${b}.attn_output.weight`, o.heads * m.nopeDim, o.embd),
  ]
}

/** glm-dsa: blocks 0, N, 2N… are "full" indexer blocks; the others ("shared") reuse the top-k of the last full one. */
export const isFullIndexer = (m: MoeShape, block: number): boolean => block % m.fullIndexerInterval === 0

/** A full block's lightning indexer (its key is layer-normed with a bias); shared blocks have none. */
export function glmIndexer(b: string, o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  const [heads, size] = [m.indexerHeads, m.indexerHeadSize]
  return [
    norm(`${b}.indexer.k_norm.weight`, size),
    bias(`${b}.indexer.k_norm.bias`, size),
    dense(`${b}.indexer.proj.weight`, o.embd, heads),
    dense(`${b}.indexer.attn_k.weight`, o.embd, size),
    dense(`${b}.indexer.attn_q_b.weight`, m.qLoraRank, heads * size),
  ]
}

export function mlaMetadata(k: ArchKeys, o: GenerateOptions, m: MoeShape): GgufKv[] {
  const kvs = [
    k.u32('attention.key_length', m.kvLoraRank + m.ropeDim),
    k.u32('attention.value_length', m.kvLoraRank),
    k.u32('attention.key_length_mla', m.nopeDim + m.ropeDim),
    k.u32('attention.value_length_mla', m.nopeDim),
    k.u32('attention.q_lora_rank', m.qLoraRank),
    k.u32('attention.kv_lora_rank', m.kvLoraRank),
    k.u32('leading_dense_block_count', m.denseBlocks),
    k.u32('expert_shared_count', m.sharedExperts),
    k.f32('expert_weights_scale', 2.5),
    k.bool('expert_weights_norm', true),
    k.u32('expert_gating_func', 2), // sigmoid, as DeepSeek-V3 and GLM-5
  ]
  if (m.expertGroups > 1)
    kvs.push(k.u32('expert_group_count', m.expertGroups), k.u32('expert_group_used_count', m.groupsUsed))
  if (o.arch === 'glm-dsa') {
    kvs.push(
      k.u32('attention.indexer.head_count', m.indexerHeads),
      k.u32('attention.indexer.key_length', m.indexerHeadSize),
      k.u32('attention.indexer.top_k', m.indexerTopK),
      // written always: without it llama.cpp makes every block full below a 1M context (GLM-5, 5.1)
      k.u32s(
        'attention.indexer.types',
        Array.from({ length: o.blocks }, (_, i) => (isFullIndexer(m, i) ? 1 : 0)),
      ),
    )
  }
  return kvs
}

export function mlaProblems(o: GenerateOptions, m: MoeShape): string[] {
  const problems: string[] = []
  if (o.arch === 'deepseek2') {
    // llama.cpp takes 26- and 27-block deepseek2 models for DeepSeek-V2-Lite: no q_lora, a plain attn_q.
    if (o.blocks === 26 || o.blocks === 27)
      problems.push(
        `--blocks ${o.blocks} makes llama.cpp read a DeepSeek-V2-Lite (no q_lora); choose another block count.`,
      )
    if (o.blocks === 48 && o.vocab === 128256)
      problems.push('--blocks 48 with --vocab 128256 makes llama.cpp read a lite deepseek2 (no q_lora); change either.')
  }
  if (m.denseBlocks >= o.blocks)
    problems.push(
      `--dense-blocks must be below --blocks (${o.blocks}) so some blocks have experts, not ${m.denseBlocks}.`,
    )
  if (m.sharedExperts < 1)
    problems.push(
      `--shared-experts must be at least 1 (llama.cpp creates shared-expert tensors for every MoE block), not ` +
        `${m.sharedExperts}.`,
    )
  if (m.qLoraRank < 1 || m.kvLoraRank < 1)
    problems.push(`--q-lora-rank (${m.qLoraRank}) and --kv-lora-rank (${m.kvLoraRank}) must be above 0.`)
  if (m.ropeDim < 2 || m.ropeDim % 2 !== 0) problems.push(`--rope-dim must be even and at least 2, not ${m.ropeDim}.`)
  if (m.nopeDim < 1)
    problems.push(`--nope-dim must be at least 1 (the MLA key needs a non-rotary part), not ${m.nopeDim}.`)
  if (o.arch === 'glm-dsa') problems.push(...indexerProblems(m, 'glm-dsa'))
  const g = m.expertGroups
  if (g > 1) {
    if (m.experts % g !== 0 || m.experts / g < 2)
      problems.push(`--experts (${m.experts}) must split into --expert-groups (${g}) of at least 2 experts each.`)
    else if (m.groupsUsed < 1 || m.groupsUsed >= g)
      problems.push(`--groups-used must be 1 to ${g - 1} (fewer than --expert-groups), not ${m.groupsUsed}.`)
    else if ((m.groupsUsed * m.experts) / g < m.expertsUsed)
      problems.push(
        `--groups-used ${m.groupsUsed} of ${g} groups hold ${(m.groupsUsed * m.experts) / g} experts, fewer than ` +
          `--experts-used ${m.expertsUsed}.`,
      )
  } else if (o.groupsUsed !== undefined && o.groupsUsed !== 0) {
    problems.push(`--groups-used needs --expert-groups of 2 or more, not ${g}.`)
  }
  return problems
}

/**
 * The lightning indexer's limits, shared by glm-dsa and deepseek4: llama.cpp rotates indexer keys
 * with a Hadamard matrix (64 wide and up; glm-dsa multiplies by one matrix the head's size, so a
 * power of two) and ropes the first --rope-dim values of each indexer head.
 */
export function indexerProblems(m: MoeShape, arch: 'glm-dsa' | 'deepseek4'): string[] {
  const problems: string[] = []
  const size = m.indexerHeadSize
  if (m.indexerHeads < 1) problems.push(`--indexer-heads must be at least 1, not ${m.indexerHeads}.`)
  if (arch === 'glm-dsa' && (size < 64 || (size & (size - 1)) !== 0))
    problems.push(`--indexer-head-size must be a power of two of at least 64 for glm-dsa, not ${size}.`)
  if (arch === 'deepseek4' && (size < 64 || size % 64 !== 0))
    problems.push(`--indexer-head-size must be a multiple of 64 for deepseek4, not ${size}.`)
  if (m.ropeDim > size)
    problems.push(
      `--rope-dim (${m.ropeDim}) must not exceed --indexer-head-size (${size}): the indexer ropes that many values ` +
        `of each head.`,
    )
  if (m.indexerTopK < 1) problems.push(`--indexer-top-k must be at least 1, not ${m.indexerTopK}.`)
  if (arch === 'glm-dsa' && m.fullIndexerInterval < 1)
    problems.push(`--full-indexer-interval must be at least 1 (block 0 is always full), not ${m.fullIndexerInterval}.`)
  if (arch === 'glm-dsa' && m.kvLoraRank + m.ropeDim === size)
    problems.push(
      `--kv-lora-rank + --rope-dim (${size}) must differ from --indexer-head-size: llama.cpp would rotate the MLA ` +
        `cache, whose values are its keys.`,
    )
  return problems
}
