import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatReport, inspectModel } from '../../../gguf/inspect'
import { packModel } from '../../../gguf/pack'
import { NeuronError } from '../../../protocol'
import { parseCommandArgs } from './args'
import type { Command } from './main'

/** The embedded default: the real tiny model shared beside the repository. */
export const DEFAULT_MODEL = resolve(fileURLToPath(new URL('../../../', import.meta.url)), '../shared/models/stories260K.gguf')

export const demoCommand: Command = {
  name: 'demo',
  summary: 'inspect a model and pack it into artifacts, end to end (the embedded default)',
  usage: `Usage: neuron demo [--model <file.gguf>]

Inspects the model (default: ${DEFAULT_MODEL}), packs it into artifacts of one
block each in a fresh temporary directory, and prints what a host would download.

Example: neuron demo`,
  async run(args) {
    const { values } = parseCommandArgs(args, { model: { type: 'string' } })
    const model = values.model ?? DEFAULT_MODEL
    console.log(formatReport(await inspectModel(model)))
    const out = join(await mkdtemp(join(tmpdir(), 'neuron-demo-')), 'artifacts')
    const manifest = await packModel({ source: model, out })
    if (manifest.artifacts.length < 3)
      throw new NeuronError('demo_failed', `packing ${model} gave ${manifest.artifacts.length} artifacts; expected embed, blocks and head.`)
    console.log(`\nPacked into ${out}:`)
    for (const a of manifest.artifacts) {
      const what = a.blocks === null ? a.role : `blocks [${a.blocks[0]}, ${a.blocks[1]})`
      console.log(`  ${a.file.padEnd(20)} ${what.padEnd(16)} ${String(a.bytes).padStart(10)} bytes  sha256 ${a.sha256.slice(0, 16)}…`)
    }
    console.log(
      `\nA host serving blocks [0, 2) downloads ${manifest.artifacts.filter((a) => a.role === 'embed' || (a.blocks !== null && a.blocks[0] < 2)).length} of these ${manifest.artifacts.length} files.`,
    )
    return 0
  },
}
