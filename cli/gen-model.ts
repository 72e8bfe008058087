import {
  GENERATED_ARCHS,
  GENERATED_TYPES,
  type GeneratedArch,
  type GeneratedType,
  generateModel,
  type MoeOptions,
} from '../gguf/generate'
import { flagOf, MOE_OPTION_KEYS } from '../gguf/generate-archs'
import { hfTokenizerMetadata } from '../gguf/hf-tokenizer'
import { formatBytes } from '../gguf/inspect'
import { quantizeRows } from '../native/quantize'
import { intOption, parseCommandArgs, renamedOption, requireOption } from './args'
import type { Command } from './command'

export const genModelCommand: Command = {
  name: 'gen-model',
  usage: `Usage: neuron gen-model --arch ${GENERATED_ARCHS.join('|')} --blocks N --embd E --heads H --kv-heads K
                        --ff F --vocab V --type ${GENERATED_TYPES.join('|')} --seed S --out file.gguf [--tied]
                        [expert and attention options below]

Writes a model llama.cpp loads, with random weights: qwen2 has q/k/v biases, qwen3 q/k norms;
a byte-fallback SentencePiece vocabulary and a ChatML chat template. Same seed, same bytes.
q4_K, q5_K and q6_K are llama-quantize's Q4_K_S, Q5_K_S and Q6_K mixes, q4_K_M its Q4_K_M mix,
quantized by ggml; rows not a multiple of 256 fall back to q5_0/q5_1/q8_0 (f16 below 32) as llama.cpp's do.

  --tied              no output.weight: the head reuses the token embedding
  --tokenizer DIR     a real vocabulary and chat template from a Hugging Face folder (tokenizer.json, and
                      tokenizer_config.json); --vocab is its size. Byte-level BPE: Llama 3, Qwen 2/3, gpt-oss
  --experts N         routed experts (every expert architecture; default 8)
  --experts-used N    experts each token uses (default 2)
  --expert-ff F       each expert's width (default --ff; mixtral's are --ff; qwen35moe's shared expert is --ff)
  --expert-groups G   deepseek2 expert groups (default 4); --groups-used U of them are searched (default 2)
  --shared-experts N  deepseek2, glm-dsa and deepseek4 shared experts (default 1)
  --dense-blocks N    deepseek2 and glm-dsa leading blocks with a dense --ff feed-forward (default 1)
  --q-lora-rank R     deepseek2 MLA query rank (default --embd/2); --kv-lora-rank (default --embd/4)
  --rope-dim R        deepseek2 MLA rotary head part (default head size/2); --nope-dim (default head size)
  --sliding-window W  gpt-oss window of its even (SWA) blocks, deepseek4's of every block (default 128)
  --full-attention-interval N  qwen35moe: every Nth block has full attention, the rest gated delta-net (default 4)
  --full-indexer-interval N    glm-dsa: blocks 0, N, 2N… run the lightning indexer, the rest reuse its top-k (default 2)
  --indexer-heads H   glm-dsa and deepseek4 lightning indexer heads (default 4); --indexer-head-size (default 64),
                      --indexer-top-k keys kept per query (default 8)
  --compress-ratios R,R,…  deepseek4, one per block: 0 (window only), 4 (compressed + indexer) or 128
                      (default 0,4,128,4,128…; needs a 4 and a 128)
  --hash-layers N     deepseek4 leading blocks routed by a token-id table (default 1)
  --output-groups G   deepseek4 attention output groups (default 2); --output-lora-rank (default --embd/4)
mixtral is llama with experts (general.architecture "llama"); deepseek2 and glm-dsa cache one MLA head and
deepseek4 one KV head (--kv-heads is ignored); qwen35moe's delta-net has --heads value and --kv-heads key heads.
glm-dsa takes deepseek2's MLA and expert options but no expert groups; deepseek4 takes --q-lora-rank, --rope-dim.

Examples:
  neuron gen-model --arch llama --blocks 4 --embd 128 --heads 4 --kv-heads 2 --ff 256 --vocab 512 --type q8_0 \\
    --seed 1 --out /tmp/tiny.gguf
  neuron gen-model --arch deepseek2 --blocks 5 --embd 256 --heads 4 --ff 512 --expert-ff 256 --vocab 384 \\
    --type q4_K_M --out /tmp/ds.gguf
  neuron gen-model --arch deepseek4 --blocks 5 --embd 256 --heads 4 --ff 256 --vocab 384 --type q8_0 --out /tmp/ds4.gguf
  neuron gen-model --arch llama --blocks 22 --embd 2048 --heads 32 --kv-heads 4 --ff 5632 --vocab 32000 --type q8_0 \\
    --seed 1 --out /tmp/1b.gguf`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      arch: { type: 'string' },
      blocks: { type: 'string' },
      layers: { type: 'string' },
      embd: { type: 'string' },
      heads: { type: 'string' },
      'kv-heads': { type: 'string' },
      ff: { type: 'string' },
      vocab: { type: 'string' },
      type: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      tied: { type: 'boolean' },
      'compress-ratios': { type: 'string' },
      tokenizer: { type: 'string' },
      ...Object.fromEntries(MOE_OPTION_KEYS.map((k) => [flagOf(k).slice(2), { type: 'string' as const }])),
    })
    const raw = values as Record<string, string | undefined>
    const num = (name: string) => requireOption(name, intOption(name, raw[name], { min: 0 }))
    const moe: Record<string, number> = {}
    for (const key of MOE_OPTION_KEYS) {
      const flag = flagOf(key).slice(2)
      const v = intOption(flag, raw[flag], { min: 0 })
      if (v !== undefined) moe[key] = v
    }
    const started = performance.now()
    const heads = num('heads')
    const tokenizer = raw.tokenizer === undefined ? undefined : await hfTokenizerMetadata(raw.tokenizer)
    const result = await generateModel({
      arch: requireOption('arch', values.arch) as GeneratedArch,
      blocks: requireOption('blocks', intOption('blocks', renamedOption(values, 'blocks', 'layers'), { min: 0 })),
      embd: num('embd'),
      heads,
      kvHeads: raw['kv-heads'] === undefined ? heads : num('kv-heads'),
      ff: num('ff'),
      vocab: tokenizer !== undefined && raw.vocab === undefined ? tokenizer.size : num('vocab'),
      ...(tokenizer === undefined ? {} : { tokenizer }),
      type: requireOption('type', values.type) as GeneratedType,
      seed: raw.seed === undefined ? 0 : num('seed'),
      out: requireOption('out', values.out),
      tied: values.tied === true,
      ...(raw['compress-ratios'] === undefined ? {} : { compressRatios: ratiosOption(raw['compress-ratios']) }),
      ...(moe as MoeOptions),
      quantize: quantizeRows,
    })
    const seconds = (performance.now() - started) / 1000
    console.log(
      `${result.path}: ${(result.parameters / 1e6).toFixed(1)}M parameters, ${formatBytes(result.bytes)} in ` +
        `${seconds.toFixed(1)} s`,
    )
    return 0
  },
}

/** --compress-ratios 0,4,128: whole numbers, comma-separated (generateModel says which ratios llama.cpp takes). */
function ratiosOption(raw: string): number[] {
  return raw
    .split(',')
    .map((part) => requireOption('compress-ratios', intOption('compress-ratios', part.trim(), { min: 0 })))
}
