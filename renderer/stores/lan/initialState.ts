import type { LanView } from '../../../protocol/lan'
import type { ShownError } from '../../api/errorText'

export interface LanState {
  view: LanView | null
  error: ShownError | null
  /** The key asked to pair with, or the pairing being confirmed or refused, while the call runs. */
  busy: string | null
}

export const initialLanState: LanState = { view: null, error: null, busy: null }
