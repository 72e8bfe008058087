import type { Earnings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface EarningsState {
  earnings: Earnings | null
  error: ShownError | null
}

export const initialEarningsState: EarningsState = { earnings: null, error: null }
