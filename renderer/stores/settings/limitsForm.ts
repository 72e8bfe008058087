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

function sizeLimit(text: string, what: string, example: number): number | null | { error: string } {
  const trimmed = text.trim()
  if (trimmed === '') return null
  const bytes = gbToBytes(trimmed)
  if (!(bytes > 0 && Number.isSafeInteger(bytes)))
    return {
      error: `${what} limit must be a number of GB greater than 0, like ${example} (leave it empty for no limit).`,
    }
  return bytes
}

/**
 * The limits the user changed from `loaded` (what the form was filled from), or the first thing wrong
 * with the form in words. Unchanged fields are left out, so saving keeps them as they are: a --threads
 * given for one run is not saved for good by saving the disk limit.
 */
export function limitsFromForm(form: LimitsForm, loaded: Limits): { changes: Partial<Limits> } | { error: string } {
  const diskBytes = sizeLimit(form.diskGb, 'Disk', 20)
  if (typeof diskBytes === 'object' && diskBytes !== null) return diskBytes
  const memoryBytes = sizeLimit(form.memoryGb, 'Memory', 8)
  if (typeof memoryBytes === 'object' && memoryBytes !== null) return memoryBytes
  const threadsText = form.threads.trim()
  const threads = /^\d+$/.test(threadsText) ? Number(threadsText) : Number.NaN
  if (!(threads >= 1 && threads <= 256))
    return { error: 'Threads must be a whole number from 1 to 256, like 8 (at most your physical cores is fastest).' }
  const changes: Partial<Limits> = {}
  if (diskBytes !== loaded.diskBytes) changes.diskBytes = diskBytes
  if (memoryBytes !== loaded.memoryBytes) changes.memoryBytes = memoryBytes
  if (threads !== loaded.threads) changes.threads = threads
  if (form.useGpu !== loaded.useGpu) changes.useGpu = form.useGpu
  return { changes }
}
