import { accountCommand } from './account'
import { appCommand } from './app'
import { chatCommand } from './chat'
import type { Command } from './command'
import { demoCommand } from './demo'
import { reportStrayErrors, typedErrorLine } from './errors'
import { genModelCommand } from './gen-model'
import { hostCommand } from './host'
import { inspectCommand } from './inspect'
import { packCommand } from './pack'
import { publishCommand } from './publish'
import { trackerCommand } from './tracker'

const COMMANDS: readonly Command[] = [
  appCommand,
  demoCommand,
  trackerCommand,
  publishCommand,
  hostCommand,
  chatCommand,
  accountCommand,
  inspectCommand,
  packCommand,
  genModelCommand,
]

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  return [
    'neuron — run very large GGUF models together on home computers',
    '',
    'Usage: neuron <command> [options]      neuron <command> --help',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
  ].join('\n')
}

/** Runs one CLI invocation and returns the exit code; typed errors print one line, `neuron <command>: error [code]: message`. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(help())
    return name === undefined ? 1 : 0
  }
  const command = COMMANDS.find((c) => c.name === name)
  if (command === undefined) {
    console.error(`neuron: unknown command "${name}". Commands: ${COMMANDS.map((c) => c.name).join(', ')}. See neuron --help.`)
    return 2
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(command.usage)
    return 0
  }
  const stopReporting = reportStrayErrors(name)
  try {
    return await command.run(rest)
  } catch (error) {
    if (error instanceof Error && 'code' in error && typeof error.code === 'string' && error.code.startsWith('ERR_PARSE_ARGS_')) {
      console.error(`neuron ${name}: ${error.message}\n\n${command.usage}`)
      return 2
    }
    const line = typedErrorLine(name, error)
    if (line === undefined) throw error
    console.error(line)
    return 1
  } finally {
    stopReporting()
  }
}
