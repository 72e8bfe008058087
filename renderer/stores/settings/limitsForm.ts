import type { Limits } from '../../../protocol/app'

/** The limits as the form holds them: text as typed, GB for sizes, empty for "no limit". */
export interface LimitsForm {
  diskGb: string
  memoryGb: string
  threads: string
  useGpu: boolean
}

const GB = 1e9
const DECIMAL = /^(\d+)(?:\.(\d+))?$/

/** Bytes as GB, exactly (1 byte is 0.000000001 GB), so an untouched field parses back to the same bytes. */
export function gbText(bytes: number): string {
  const whole = Math.floor(bytes / GB)
  const rest = bytes - whole * GB
  return rest === 0 ? String(whole) : `${whole}.${String(rest).padStart(9, '0').replace(/0+$/, '')}`
}

/** Decimal GB text as whole bytes, digits past the byte rounded; NaN when it is not a plain decimal. */
function gbToBytes(text: string): number {
  const match = DECIMAL.exec(text)
  if (match === null) return Number.NaN
  const fraction = match[2] ?? ''
  const roundUp = fraction.length > 9 && Number(fraction[9]) >= 5 ? 1 : 0
  return Number(match[1]) * GB + Number(fraction.slice(0, 9).padEnd(9, '0')) + roundUp
}

export function limitsToForm(limits: Limits): LimitsForm {
  const gb = (bytes: number | null) => (bytes === null ? '' : gbText(bytes))
  return {
    diskGb: gb(limits.diskBytes),
    memoryGb: gb(limits.memoryBytes),
    threads: String(limits.threads),
    useGpu: limits.useGpu,
  }
}

/** The form's typed fields, each with its own error under it. */
export type LimitField = 'diskGb' | 'memoryGb' | 'threads'
export type LimitErrors = Partial<Record<LimitField, string>>

/**
 * The least a size limit may be set to. Under it nothing useful is hosted: the smallest layer of a real model and
 * its KV cache take tens of MB, and a downloaded model hundreds; a smaller figure is a slip (0.0001 for 100).
 */
export const MIN_LIMIT_GB = { diskGb: 1, memoryGb: 1 } as const

function sizeLimit(
  text: string,
  field: 'diskGb' | 'memoryGb',
  loaded: number | null,
): { bytes: number | null } | { error: string } {
  const trimmed = text.trim()
  if (trimmed === '') return { bytes: null }
  const what = field === 'diskGb' ? 'Disk' : 'Memory'
  const bytes = gbToBytes(trimmed)
  if (!(bytes > 0 && Number.isSafeInteger(bytes)))
    return { error: `${what}: a number of GB, like ${field === 'diskGb' ? 20 : 8}; empty for no limit.` }
  // A value saved before the floor existed may stay as it is; a new one may not go under it.
  if (bytes !== loaded && bytes < MIN_LIMIT_GB[field] * GB)
    return {
      error:
        `${what}: at least ${MIN_LIMIT_GB[field]} GB, or no model layer ` +
        `${field === 'diskGb' ? 'can be downloaded' : 'fits with its cache'}; empty for no limit.`,
    }
  return { bytes }
}

/**
 * The limits the user changed from `loaded` (what the form was filled from), or what is wrong with each field, in
 * words. Unchanged fields are left out, so saving keeps them as they are: a --threads given for one run is not saved
 * for good by saving the disk limit.
 */
export function limitsFromForm(
  form: LimitsForm,
  loaded: Limits,
): { changes: Partial<Limits> } | { errors: LimitErrors } {
  const errors: LimitErrors = {}
  const disk = sizeLimit(form.diskGb, 'diskGb', loaded.diskBytes)
  if ('error' in disk) errors.diskGb = disk.error
  const memory = sizeLimit(form.memoryGb, 'memoryGb', loaded.memoryBytes)
  if ('error' in memory) errors.memoryGb = memory.error
  const threadsText = form.threads.trim()
  const threads = /^\d+$/.test(threadsText) ? Number(threadsText) : Number.NaN
  if (!(threads >= 1 && threads <= 256)) errors.threads = 'Threads: a whole number from 1 to 256.'
  if ('error' in disk || 'error' in memory || Object.keys(errors).length > 0) return { errors }
  const changes: Partial<Limits> = {}
  if (disk.bytes !== loaded.diskBytes) changes.diskBytes = disk.bytes
  if (memory.bytes !== loaded.memoryBytes) changes.memoryBytes = memory.bytes
  if (threads !== loaded.threads) changes.threads = threads
  if (form.useGpu !== loaded.useGpu) changes.useGpu = form.useGpu
  return { changes }
}
