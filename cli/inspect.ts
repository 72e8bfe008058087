import { readFile } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { estimateFromConfig } from '../gguf/config-manifest'
import { formatEstimate, formatReport, inspectModel } from '../gguf/inspect'
import { NeuronError } from '../protocol'
import { servingPreview } from '../tracker/placement/route-size'
import { parseCommandArgs } from './args'
import type { Command } from './command'

export const inspectCommand: Command = {
  name: 'inspect',
  usage: `Usage: neuron inspect <model.gguf> [--json]
       neuron inspect --config <config.json> [--usable <GB>] [--json]

Shows the architecture, hyper-parameters, tensor types, bytes per block,
each block's cache bytes per token (KV, MLA latent or sliding window) and
total size. With --config, sizes a model from its Hugging Face config.json
at Q4_K_M without any weights, and previews serving it: how many hosts with
--usable GB of memory each (default 12) a route needs, the bytes per token
crossing each cut, and the cache per token of a 128K-token session.

Example: neuron inspect resources/models/stories260K.gguf`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      json: { type: 'boolean' },
      config: { type: 'string' },
      usable: { type: 'string' },
    })
    if (values.config !== undefined) {
      if (positionals.length > 0)
        throw new NeuronError(
          'bad_option',
          'inspect takes a GGUF file or --config, not both. See neuron inspect --help.',
        )
      const config = values.config
      const json: unknown = JSON.parse(await readFile(config, 'utf8'))
      const estimate = estimateFromConfig(json, basename(dirname(config)) || basename(config))
      const usableGb = Number(values.usable ?? 12)
      if (!(usableGb > 0))
        throw new NeuronError(
          'bad_option',
          `--usable takes the GB of memory each host may use, e.g. 12; got ${values.usable}`,
        )
      const serving = servingPreview(estimate, usableGb * 1e9)
      console.log(
        values.json ? JSON.stringify({ ...estimate, serving }, null, 2) : formatEstimate(estimate, config, serving),
      )
      return 0
    }
    const [path, ...extra] = positionals
    if (path === undefined || extra.length > 0)
      throw new NeuronError('bad_option', 'inspect takes exactly one GGUF file. See neuron inspect --help.')
    const report = await inspectModel(path)
    console.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report))
    return 0
  },
}
