// deepseek4 (llama.cpp src/models/deepseek4.cpp, src/llama-kv-cache-dsv4.cpp): four hyper-connection
// streams (4 × --embd) run through the blocks; a low-rank query, one KV head, attention sinks and a
// grouped low-rank output; per block a sliding-window key cache plus, by its compress ratio, a
// 4× compressed cache with a lightning indexer or a 128× one; the first --hash-layers blocks route
// by a token id → experts table, the rest by sqrt-softplus scores; SwiGLU clamped.
import { indexerProblems } from './generate-archs-mla'
import type { GenerateOptions, MoeShape } from './generate-options'
import type { PlannedTensor } from './generate-quant'
import {
  type ArchKeys,
  dense,
  norm,
  outputStd,
  routedExperts,
  routerStd,
  sharedExpert,
  uniform,
} from './generate-tensors'
import type { GgufKv } from './reader'

/** Hyper-connection streams: llama.cpp asserts exactly 4. */
const HC = 4
/** Each hyper-connection's mix: pre (HC), post (HC) and the HC × HC combination. */
const HC_MIX = (2 + HC) * HC
const RATIOS = [0, 4, 128]

/** Each block's compress ratio: as given, else block 0 window-only, then 4 and 128 alternating. */
export function compressRatios(o: GenerateOptions): readonly number[] {
  return o.compressRatios ?? Array.from({ length: o.blocks }, (_, i) => (i === 0 ? 0 : i % 2 === 1 ? 4 : 128))
}

export function deepseek4Problems(o: GenerateOptions, m: MoeShape): string[] {
  const problems: string[] = []
  const head = o.embd / o.heads
  const ratios = compressRatios(o)
  if (o.tied) problems.push('deepseek4 always has its own output.weight; drop --tied.')
  if (ratios.length !== o.blocks)
    problems.push(`--compress-ratios needs one ratio per block (${o.blocks}), not ${ratios.length}.`)
  else if (ratios.some((r) => !RATIOS.includes(r)))
    problems.push(`--compress-ratios takes only 0, 4 and 128 (llama.cpp's loader), not ${ratios.join(',')}.`)
  // llama_kv_cache_dsv4 divides by the sizes of both compressed caches: SIGFPE without either
  else if (!ratios.includes(4) || !ratios.includes(128))
    problems.push(
      `--compress-ratios (${ratios.join(',')}) needs at least one 4 and one 128 block; with fewer than 3 blocks ` +
        `give them, e.g. 4,128.`,
    )
  if (m.hashLayers > o.blocks) problems.push(`--hash-layers must be 0 to --blocks (${o.blocks}), not ${m.hashLayers}.`)
  if (m.sharedExperts < 1)
    problems.push(
      `--shared-experts must be at least 1 (llama.cpp creates a shared expert in every block), not ${m.sharedExperts}.`,
    )
  if (m.qLoraRank < 1) problems.push(`--q-lora-rank must be above 0, not ${m.qLoraRank}.`)
  if (m.ropeDim < 2 || m.ropeDim % 2 !== 0 || m.ropeDim > head)
    problems.push(`--rope-dim must be even, 2 to the head size (${head}), not ${m.ropeDim}.`)
  if (m.outputGroups < 1 || o.heads % m.outputGroups !== 0)
    problems.push(`--output-groups must divide --heads (${o.heads}), not ${m.outputGroups}.`)
  if (m.outputLoraRank < 1) problems.push(`--output-lora-rank must be above 0, not ${m.outputLoraRank}.`)
  problems.push(...indexerProblems(m, 'deepseek4'))
  return problems
}

export function deepseek4Tensors(o: GenerateOptions, m: MoeShape): PlannedTensor[] {
  const head = o.embd / o.heads
  const hcDim = HC * o.embd
  const ratios = compressRatios(o)
  const [ih, id] = [m.indexerHeads, m.indexerHeadSize]
  // mixes = fn · rmsnorm(streams): about one unit each; scale × mixes + base feeds sigmoids and Sinkhorn
  const hc = (name: string, mix: number, scales: number): PlannedTensor[] => [
    dense(`${name}_fn.weight`, hcDim, mix),
    uniform(`${name}_base.weight`, [mix], 0.5),
    { name: `${name}_scale.weight`, shape: [scales], init: { kind: 'around-one', spread: 0.2 } },
  ]
  const compressor = (b: string, width: number, ratio: number, normWidth: number): PlannedTensor[] => [
    dense(`${b}_kv.weight`, o.embd, width),
    dense(`${b}_gate.weight`, o.embd, width),
    uniform(`${b}_ape.weight`, [width, ratio], 0.5),
    norm(`${b}_norm.weight`, normWidth),
  ]
  const tensors: PlannedTensor[] = [uniform('token_embd.weight', [o.embd, o.vocab], 1)]
  for (let i = 0; i < o.blocks; i++) {
    const b = `blk.${i}`
    const ratio = ratios[i] ?? 0
    tensors.push(
      norm(`${b}.attn_norm.weight`, o.embd),
      uniform(`${b}.attn_sinks.weight`, [o.heads], 1),
      dense(`${b}.attn_q_a.weight`, o.embd, m.qLoraRank),
      norm(`${b}.attn_q_a_norm.weight`, m.qLoraRank),
      dense(`${b}.attn_q_b.weight`, m.qLoraRank, o.heads * head),
      dense(`${b}.attn_kv.weight`, o.embd, head),
      norm(`${b}.attn_kv_a_norm.weight`, head),
      // as the converter writes it: llama.cpp reshapes to (group width, rank, groups)
      dense(`${b}.attn_output_a.weight`, (o.heads * head) / m.outputGroups, m.outputLoraRank * m.outputGroups),
      dense(`${b}.attn_output_b.weight`, m.outputGroups * m.outputLoraRank, o.embd),
      ...hc(`${b}.hc_attn`, HC_MIX, 3),
      ...hc(`${b}.hc_ffn`, HC_MIX, 3),
    )
    if (ratio !== 0) tensors.push(...compressor(`${b}.attn_compressor`, (ratio === 4 ? 2 : 1) * head, ratio, head))
    if (ratio === 4) {
      tensors.push(
        dense(`${b}.indexer.proj.weight`, o.embd, ih),
        dense(`${b}.indexer.attn_q_b.weight`, m.qLoraRank, ih * id),
      )
      tensors.push(...compressor(`${b}.indexer_compressor`, 2 * id, ratio, id))
    }
    const [router, ...experts] = routedExperts(b, o.embd, m.expertFf, m.experts, routerStd(o))
    tensors.push(router as PlannedTensor)
    // hash-routed blocks pick experts by token id (the router still weighs them); the others add a score bias
    if (i < m.hashLayers)
      tensors.push({
        name: `${b}.ffn_gate_tid2eid.weight`,
        shape: [m.expertsUsed, o.vocab],
        init: { kind: 'expert-ids', experts: m.experts },
      })
    else tensors.push(uniform(`${b}.exp_probs_b.bias`, [m.experts], 0.05))
    tensors.push(
      norm(`${b}.ffn_norm.weight`, o.embd),
      ...experts,
      ...sharedExpert(b, o.embd, m.expertFf * m.sharedExperts),
    )
  }
  tensors.push(
    norm('output_norm.weight', o.embd),
    uniform('output.weight', [o.embd, o.vocab], outputStd(o)),
    ...hc('output_hc', HC, 1),
  )
  return tensors
}

export function deepseek4Metadata(k: ArchKeys, o: GenerateOptions, m: MoeShape): GgufKv[] {
  const head = o.embd / o.heads
  const perBlock = (v: number) => Array.from({ length: o.blocks }, () => v)
  return [
    k.u32('embedding_length_out', HC * o.embd),
    k.u32('attention.key_length', head),
    k.u32('attention.value_length', head),
    k.u32('attention.q_lora_rank', m.qLoraRank),
    k.u32('attention.sliding_window', m.slidingWindow),
    k.u32('attention.output_group_count', m.outputGroups),
    k.u32('attention.output_lora_rank', m.outputLoraRank),
    k.u32s('attention.compress_ratios', [...compressRatios(o)]),
    k.f32('attention.compress_rope_freq_base', 160_000),
    k.u32('attention.indexer.head_count', m.indexerHeads),
    k.u32('attention.indexer.key_length', m.indexerHeadSize),
    k.u32('attention.indexer.top_k', m.indexerTopK),
    k.u32('expert_shared_count', m.sharedExperts),
    k.f32('expert_weights_scale', 1.5),
    k.bool('expert_weights_norm', true),
    k.u32('expert_gating_func', 4), // sqrt(softplus(logit)), the only scoring llama.cpp's deepseek4 loader takes
    k.f32s('swiglu_clamp_exp', perBlock(10)),
    k.f32s('swiglu_clamp_shexp', perBlock(10)),
    k.u32('hyper_connection.count', HC),
    k.u32('hyper_connection.sinkhorn_iterations', 20),
    k.f32('hyper_connection.epsilon', 1e-6),
    k.u32('hash_layer_count', m.hashLayers),
  ]
}
