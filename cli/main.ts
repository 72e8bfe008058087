import type { CommandEntry } from './command'
import { reportStrayErrors, typedErrorLine } from './errors'

/** Every command, loaded only when it runs: `neuron --help` imports none of them. */
const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'app',
    summary: 'the desktop app (Electron), or the same UI in a browser when Electron is not installed',
    load: async () => (await import('./app')).appCommand,
  },
  {
    name: 'demo',
    summary: 'a whole swarm on this machine: tracker, publisher, three hosts, a streamed completion',
    load: async () => (await import('./demo')).demoCommand,
  },
  {
    name: 'tracker',
    summary: 'run a tracker: registry, placement, routing, relay and a BitTorrent tracker on one port',
    load: async () => (await import('./tracker')).trackerCommand,
  },
  {
    name: 'pull',
    summary: 'download a GGUF model from Hugging Face (resumable, sha256-checked) and pack it for publishing',
    load: async () => (await import('./pull')).pullCommand,
  },
  {
    name: 'publish',
    summary: 'publish a packed model to a tracker and seed its artifacts',
    load: async () => (await import('./publish')).publishCommand,
  },
  {
    name: 'host',
    summary: 'serve blocks of a model to the swarm',
    load: async () => (await import('./host')).hostCommand,
  },
  {
    name: 'chat',
    summary: 'generate from a swarm model, streaming tokens',
    load: async () => (await import('./chat')).chatCommand,
  },
  {
    name: 'account',
    summary: 'create a gateway account (API key + starting grant) in a tracker’s database',
    load: async () => (await import('./account')).accountCommand,
  },
  {
    name: 'inspect',
    summary: 'show a GGUF model’s architecture, sizes per block and cache cost per block',
    load: async () => (await import('./inspect')).inspectCommand,
  },
  {
    name: 'pack',
    summary: 'split a GGUF model into artifacts (embed, block ranges, head) and a manifest',
    load: async () => (await import('./pack')).packCommand,
  },
  {
    name: 'gen-model',
    summary: 'write a GGUF model with random weights, for tests and benchmarks',
    load: async () => (await import('./gen-model')).genModelCommand,
  },
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

/**
 * Runs one CLI invocation and returns the exit code; typed errors
 * print one line, `neuron <command>: error [code]: message`.
 */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(help())
    return name === undefined ? 1 : 0
  }
  const entry = COMMANDS.find((c) => c.name === name)
  if (entry === undefined) {
    console.error(
      `neuron: unknown command "${name}". Commands: ${COMMANDS.map((c) => c.name).join(', ')}. See neuron --help.`,
    )
    return 2
  }
  const command = await entry.load()
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(command.usage)
    return 0
  }
  const stopReporting = reportStrayErrors(name)
  try {
    return await command.run(rest)
  } catch (error) {
    if (
      error instanceof Error &&
      'code' in error &&
      typeof error.code === 'string' &&
      error.code.startsWith('ERR_PARSE_ARGS_')
    ) {
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
