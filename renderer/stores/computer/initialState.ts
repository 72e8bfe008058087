import type { ComputerView } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface ComputerState {
  view: ComputerView | null
  loading: boolean
  error: ShownError | null
}

export const initialComputerState: ComputerState = { view: null, loading: false, error: null }
