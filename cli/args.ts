import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { type BlockRange, NeuronError } from '../protocol'

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

/**
 * An option that was renamed: the new name's value, else the old name's with a note on stderr that
 * it is an alias (e.g. --layers for --blocks).
 */
export function renamedOption(values: Record<string, unknown>, name: string, alias: string): string | undefined {
  const value = values[name]
  if (typeof value === 'string') return value
  const old = values[alias]
  if (typeof old !== 'string') return undefined
  console.error(`--${alias} is an alias of --${name}; say --${name} ${old}`)
  return old
}

/** --blocks a:b (blocks [a, b)) or auto (the tracker's placement). */
export function blocksOption(raw: string | undefined): BlockRange | 'auto' {
  if (raw === undefined || raw === 'auto') return 'auto'
  const m = /^(\d+):(\d+)$/.exec(raw)
  if (m === null || Number(m[1]) >= Number(m[2])) throw new NeuronError('bad_option', `--blocks takes a:b with a < b (blocks [a, b)) or auto, not "${raw}".`)
  return [Number(m[1]), Number(m[2])]
}

/** Runtime threads when not given: the cores, at most 2 (more oversubscribes small machines). */
export const defaultThreads = (): number => Math.max(1, Math.min(2, availableParallelism()))
