/** One `neuron <name>` command: each lives in its own file, which cli/main.ts loads only when it runs. */
export interface Command {
  readonly name: string
  readonly usage: string
  run(args: string[]): Promise<number>
}

/**
 * What `neuron --help` lists of a command without loading it (its module imports the tracker, the host, the runtime…).
 */
export interface CommandEntry {
  readonly name: string
  readonly summary: string
  load(): Promise<Command>
}
