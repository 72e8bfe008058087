import { GENERATED_ARCHS, GENERATED_TYPES, type GeneratedArch, type GeneratedType, generateModel } from '../gguf/generate'
import { formatBytes } from '../gguf/inspect'
import { intOption, parseCommandArgs, renamedOption, requireOption } from './args'
import type { Command } from './command'

export const genModelCommand: Command = {
  name: 'gen-model',
  summary: 'write a GGUF model with random weights, for tests and benchmarks',
  usage: `Usage: neuron gen-model --arch ${GENERATED_ARCHS.join('|')} --blocks N --embd E --heads H --kv-heads K
                        --ff F --vocab V --type ${GENERATED_TYPES.join('|')} --seed S --out file.gguf [--tied]

Writes a model llama.cpp loads, with random weights: qwen2 has q/k/v biases, qwen3 q/k norms;
a byte-fallback SentencePiece vocabulary and a ChatML chat template. Same seed, same bytes.

  --tied    no output.weight: the head reuses the token embedding

Examples:
  neuron gen-model --arch llama --blocks 4 --embd 128 --heads 4 --kv-heads 2 --ff 256 --vocab 512 --type q8_0 --seed 1 --out /tmp/tiny.gguf
  neuron gen-model --arch llama --blocks 22 --embd 2048 --heads 32 --kv-heads 4 --ff 5632 --vocab 32000 --type q8_0 --seed 1 --out /tmp/1b.gguf`,
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
    })
    const num = (name: string) => requireOption(name, intOption(name, values[name as keyof typeof values] as string | undefined, { min: 0 }))
    const started = performance.now()
    const heads = num('heads')
    const result = await generateModel({
      arch: requireOption('arch', values.arch) as GeneratedArch,
      blocks: requireOption('blocks', intOption('blocks', renamedOption(values, 'blocks', 'layers'), { min: 0 })),
      embd: num('embd'),
      heads,
      kvHeads: values['kv-heads'] === undefined ? heads : num('kv-heads'),
      ff: num('ff'),
      vocab: num('vocab'),
      type: requireOption('type', values.type) as GeneratedType,
      seed: values.seed === undefined ? 0 : num('seed'),
      out: requireOption('out', values.out),
      tied: values.tied ?? false,
    })
    const seconds = (performance.now() - started) / 1000
    console.log(`${result.path}: ${(result.parameters / 1e6).toFixed(1)}M parameters, ${formatBytes(result.bytes)} in ${seconds.toFixed(1)} s`)
    return 0
  },
}
