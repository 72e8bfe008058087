import { ShardRuntimeError } from '../native/errors'
import { NeuronError } from '../protocol'

/**
 * The code of an error a person can act on from its message alone: a NeuronError, the runtime's ShardRuntimeError
 * (a model it refuses), or a Node system error (a file or port: ENOENT, EADDRINUSE). Anything else is a bug, whose
 * stack trace is worth printing; undefined then.
 */
export function typedErrorCode(error: unknown): string | undefined {
  if (error instanceof NeuronError || error instanceof ShardRuntimeError) return error.code
  if (!(error instanceof Error)) return undefined
  const { code, syscall } = error as NodeJS.ErrnoException
  return typeof code === 'string' && typeof syscall === 'string' ? code : undefined
}

/** `neuron <command>: error [code]: message`, one line, for a typed error; undefined for any other. */
export function typedErrorLine(command: string, error: unknown): string | undefined {
  const code = typedErrorCode(error)
  if (code === undefined) return undefined
  const message = (error as Error).message.replace(/\s*\n\s*/g, ' ')
  return `neuron ${command}: error [${code}]: ${message}`
}

/**
 * While a command runs, an error nothing awaited (a background task's rejection) also ends the process with one
 * line when it is typed; any other prints its stack as Node would. Returns the removal of the handlers.
 */
export function reportStrayErrors(command: string): () => void {
  const report = (error: unknown) => {
    console.error(typedErrorLine(command, error) ?? error)
    process.exit(1)
  }
  process.on('uncaughtException', report)
  process.on('unhandledRejection', report)
  return () => {
    process.off('uncaughtException', report)
    process.off('unhandledRejection', report)
  }
}
