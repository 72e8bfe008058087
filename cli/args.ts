import { parseArgs } from 'node:util'
import { NeuronError } from '../protocol'

type Spec = Record<string, { type: 'string' | 'boolean'; short?: string }>

/** parseArgs with Neuron's error style; positionals allowed. */
export function parseCommandArgs<T extends Spec>(
  args: string[],
  options: T,
): ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>> {
  return parseArgs({ args, options, allowPositionals: true, strict: true })
}

/** A whole number from an option, or a clear error naming the option. */
export function intOption(name: string, raw: string | undefined, { min = 0 }: { min?: number } = {}): number | undefined {
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < min) throw new NeuronError('bad_option', `--${name} must be a whole number of at least ${min}, not "${raw}".`)
  return n
}

export function requireOption<V>(name: string, value: V | undefined): V {
  if (value === undefined) throw new NeuronError('bad_option', `--${name} is required.`)
  return value
}
