import type { ReputationView } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface ReputationState {
  view: ReputationView | null
  error: ShownError | null
}

export const initialReputationState: ReputationState = { view: null, error: null }
