import { formatBytes } from '../gguf/inspect'
import { packModel } from '../gguf/pack'
import { NeuronError } from '../protocol'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './command'

export const packCommand: Command = {
  name: 'pack',
  usage: `Usage: neuron pack <model.gguf> --out <dir> [--blocks-per-artifact N | --max-artifact-bytes B] [--model-id ID]

Writes <dir>/embed.gguf, <dir>/blocks-A-B.gguf …, <dir>/head.gguf and <dir>/manifest.json.
Each artifact is a GGUF with the model's full metadata and only its own tensors.
<dir> must not exist; nothing is left behind if packing fails.

  --blocks-per-artifact N   blocks per artifact file (default 1)
  --max-artifact-bytes B    instead, as many whole blocks as fit in B bytes
  --model-id ID             the id hosts and clients use (default: the file name)

Example: neuron pack resources/models/stories260K.gguf --out /tmp/stories --blocks-per-artifact 2`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      out: { type: 'string' },
      'blocks-per-artifact': { type: 'string' },
      'max-artifact-bytes': { type: 'string' },
      'model-id': { type: 'string' },
    })
    const [source, ...extra] = positionals
    if (source === undefined || extra.length > 0)
      throw new NeuronError('bad_option', 'pack takes exactly one GGUF file. See neuron pack --help.')
    const blocksPerArtifact = intOption('blocks-per-artifact', values['blocks-per-artifact'], { min: 1 })
    const maxArtifactBytes = intOption('max-artifact-bytes', values['max-artifact-bytes'], { min: 1 })
    if (blocksPerArtifact !== undefined && maxArtifactBytes !== undefined) {
      throw new NeuronError('bad_option', 'give --blocks-per-artifact or --max-artifact-bytes, not both.')
    }
    const started = performance.now()
    const manifest = await packModel({
      source,
      out: requireOption('out', values.out),
      ...(blocksPerArtifact === undefined ? {} : { blocksPerArtifact }),
      ...(maxArtifactBytes === undefined ? {} : { maxArtifactBytes }),
      ...(values['model-id'] === undefined ? {} : { modelId: values['model-id'] }),
    })
    const seconds = (performance.now() - started) / 1000
    for (const a of manifest.artifacts) {
      const what = a.blocks === null ? a.role : `blocks [${a.blocks[0]}, ${a.blocks[1]})`
      console.log(
        `${a.file.padEnd(24)} ${what.padEnd(18)} ${formatBytes(a.bytes).padStart(10)}  ${a.sha256.slice(0, 16)}…`,
      )
    }
    console.log(
      `${manifest.modelId}: ${manifest.artifacts.length} artifacts and manifest.json in ${values.out} ` +
        `(${seconds.toFixed(2)} s)`,
    )
    return 0
  },
}
