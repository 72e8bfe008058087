import type { Limits } from '../../../protocol/app'

/** The limits as the form holds them: text as typed, GB for sizes, empty for "no limit". */
export interface LimitsForm {
  diskGb: string
  memoryGb: string
  threads: string
  useGpu: boolean
}

const GB = 1e9
const DECIMAL = /^\d+(\.\d+)?$/

export function limitsToForm(limits: Limits): LimitsForm {
  const gb = (bytes: number | null) => (bytes === null ? '' : String(Math.round((bytes / GB) * 100) / 100))
  return { diskGb: gb(limits.diskBytes), memoryGb: gb(limits.memoryBytes), threads: String(limits.threads), useGpu: limits.useGpu }
}

function sizeLimit(text: string, what: string, example: number): number | null | { error: string } {
  const trimmed = text.trim()
  if (trimmed === '') return null
  const gb = DECIMAL.test(trimmed) ? Number(trimmed) : Number.NaN
  if (!(gb > 0)) return { error: `${what} limit must be a number of GB greater than 0, like ${example} (leave it empty for no limit).` }
  return Math.round(gb * GB)
}

/** The limits to send, or the first thing wrong with the form in words. */
export function limitsFromForm(form: LimitsForm): { limits: Limits } | { error: string } {
  const diskBytes = sizeLimit(form.diskGb, 'Disk', 20)
  if (typeof diskBytes === 'object' && diskBytes !== null) return diskBytes
  const memoryBytes = sizeLimit(form.memoryGb, 'Memory', 8)
  if (typeof memoryBytes === 'object' && memoryBytes !== null) return memoryBytes
  const threadsText = form.threads.trim()
  const threads = /^\d+$/.test(threadsText) ? Number(threadsText) : Number.NaN
  if (!(threads >= 1 && threads <= 256)) return { error: 'Threads must be a whole number from 1 to 256, like 8 (at most your physical cores is fastest).' }
  return { limits: { diskBytes, memoryBytes, threads, useGpu: form.useGpu } }
}
