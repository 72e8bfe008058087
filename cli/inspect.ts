import { formatReport, inspectModel } from '../gguf/inspect'
import { NeuronError } from '../protocol'
import { parseCommandArgs } from './args'
import type { Command } from './command'

export const inspectCommand: Command = {
  name: 'inspect',
  summary: 'show a GGUF model’s architecture, sizes per block and KV cost',
  usage: `Usage: neuron inspect <model.gguf> [--json]

Shows the architecture, hyper-parameters, tensor types, bytes per block,
KV-cache bytes per token per block and total size.

Example: neuron inspect ../shared/models/stories260K.gguf`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, { json: { type: 'boolean' } })
    const [path, ...extra] = positionals
    if (path === undefined || extra.length > 0) throw new NeuronError('bad_option', 'inspect takes exactly one GGUF file. See neuron inspect --help.')
    const report = await inspectModel(path)
    console.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report))
    return 0
  },
}
