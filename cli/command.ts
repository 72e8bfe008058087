/** One `neuron <name>` command: cli/main.ts lists them; each lives in its own file. */
export interface Command {
  readonly name: string
  readonly summary: string
  readonly usage: string
  run(args: string[]): Promise<number>
}
