import type { LogLine } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface LogState {
  lines: LogLine[]
  /** Lines the backend no longer had, or sent no more of, before the first one shown. */
  skipped: number
  error: ShownError | null
  /** Only lines containing this are shown (case-insensitive). */
  filter: string
}

export const initialLogState: LogState = { lines: [], skipped: 0, error: null, filter: '' }
