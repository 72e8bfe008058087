import type { ApiAccessView } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export interface ApiAccessState {
  view: ApiAccessView | null
  /** The key just made, in full: shown this once, forgotten when the screen closes or the key is revoked. */
  freshKey: string | null
  /** A key is being made or revoked. */
  busy: boolean
  error: ShownError | null
}

export const initialApiAccessState: ApiAccessState = { view: null, freshKey: null, busy: false, error: null }
