import type { ApiAccessView, ApiRequestRow } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

/** A step that ends a key in use, waiting for the user's yes: revoking it, or replacing it with a new one. */
export type KeyConfirmation = 'revoke' | 'replace'

export interface ApiAccessState {
  view: ApiAccessView | null
  /** The key just made, in full: shown this once, forgotten when the screen closes or the key is revoked. */
  freshKey: string | null
  /** A key is being made or revoked, or the home-network switch is being turned. */
  busy: boolean
  /** Asking before a key in use stops working; null: nothing asked. */
  confirming: KeyConfirmation | null
  /** The app account's latest API requests, newest first; null until loaded. */
  requests: ApiRequestRow[] | null
  error: ShownError | null
}

export const initialApiAccessState: ApiAccessState = {
  view: null,
  freshKey: null,
  busy: false,
  confirming: null,
  requests: null,
  error: null,
}
