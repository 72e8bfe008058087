import { readFile } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { estimateFromConfig } from '../gguf/config-manifest'
import { formatEstimate, formatReport, inspectModel } from '../gguf/inspect'
import { NeuronError } from '../protocol'
import { parseCommandArgs } from './args'
import type { Command } from './command'

export const inspectCommand: Command = {
  name: 'inspect',
  summary: 'show a GGUF model’s architecture, sizes per block and cache cost per block',
  usage: `Usage: neuron inspect <model.gguf> [--json]
       neuron inspect --config <config.json> [--json]

Shows the architecture, hyper-parameters, tensor types, bytes per block,
each block's cache bytes per token (KV, MLA latent or sliding window) and
total size. With --config, sizes a model from its Hugging Face config.json
at Q4_K_M without any weights.

Example: neuron inspect ../shared/models/stories260K.gguf`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, { json: { type: 'boolean' }, config: { type: 'string' } })
    if (values.config !== undefined) {
      if (positionals.length > 0) throw new NeuronError('bad_option', 'inspect takes a GGUF file or --config, not both. See neuron inspect --help.')
      const config = values.config
      const json: unknown = JSON.parse(await readFile(config, 'utf8'))
      const estimate = estimateFromConfig(json, basename(dirname(config)) || basename(config))
      console.log(values.json ? JSON.stringify(estimate, null, 2) : formatEstimate(estimate, config))
      return 0
    }
    const [path, ...extra] = positionals
    if (path === undefined || extra.length > 0) throw new NeuronError('bad_option', 'inspect takes exactly one GGUF file. See neuron inspect --help.')
    const report = await inspectModel(path)
    console.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report))
    return 0
  },
}
