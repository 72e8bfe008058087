import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { createSecureContext } from 'node:tls'
import { parseArgs } from 'node:util'
import type { TlsCertificate } from '../dataplane/tls-trust'
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
export function intOption(
  name: string,
  raw: string | undefined,
  { min = 0, max }: { min?: number; max?: number } = {},
): number | undefined {
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) {
    const range = max === undefined ? `of at least ${min}` : `from ${min} to ${max}`
    throw new NeuronError('bad_option', `--${name} must be a whole number ${range}, not "${raw}".`)
  }
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
  if (m === null || Number(m[1]) >= Number(m[2]))
    throw new NeuronError('bad_option', `--blocks takes a:b with a < b (blocks [a, b)) or auto, not "${raw}".`)
  return [Number(m[1]), Number(m[2])]
}

/** Runtime threads when not given: the cores, at most 2 (more oversubscribes small machines). */
export const defaultThreads = (): number => Math.max(1, Math.min(2, availableParallelism()))

/** A text file an option names, or a clear error saying which option and why it could not be read. */
export function readOptionFile(name: string, path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new NeuronError(
      'bad_option',
      `--${name} ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? error}); give ${what}.`,
    )
  }
}

/** --tls-key and --tls-cert (PEM files), given together and making a pair; undefined when neither is given. */
export function tlsOptions(values: { 'tls-key'?: string; 'tls-cert'?: string }): TlsCertificate | undefined {
  const keyPath = values['tls-key']
  const certPath = values['tls-cert']
  if (keyPath === undefined && certPath === undefined) return undefined
  if (keyPath === undefined || certPath === undefined)
    throw new NeuronError(
      'bad_option',
      '--tls-key and --tls-cert go together: give both PEM files, or neither for plain http.',
    )
  const tls = {
    key: readOptionFile('tls-key', keyPath, 'the PEM private key file'),
    cert: readOptionFile('tls-cert', certPath, 'the PEM certificate file'),
  }
  try {
    createSecureContext(tls)
  } catch (error) {
    throw new NeuronError(
      'bad_option',
      `--tls-key ${keyPath} and --tls-cert ${certPath} are not a PEM key and its certificate ` +
        `(${error instanceof Error ? error.message : error}); check that they belong together.`,
    )
  }
  return tls
}
