import type { SwarmView } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface SwarmState {
  view: SwarmView | null
  error: ShownError | null
}

export const initialSwarmState: SwarmState = { view: null, error: null }
