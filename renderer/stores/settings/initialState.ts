import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import type { LimitErrors } from './limitsForm'

export type SettingsSection = 'tracker' | 'identity' | 'limits' | 'access' | 'consent' | 'lan'

export interface SettingsState {
  settings: Settings | null
  loadError: ShownError | null
  trackerError: ShownError | null
  identityError: ShownError | null
  /** A refused save of the limits that belongs to no one field. */
  limitsError: ShownError | null
  /** What is wrong with each limit, shown under its field. */
  limitFieldErrors: LimitErrors
  /** The embedded swarm's allow-list. */
  accessError: ShownError | null
  /** Why agreeing to chat on a public swarm did not go through. */
  consentError: ShownError | null
  /** Why opening or closing the embedded swarm to the home network did not go through. */
  lanError: ShownError | null
  /** The section a save is running for, so its button can show it. */
  saving: SettingsSection | null
  /** When the last save succeeded (ms), for the transient "Saved" note. */
  savedAt: number | null
  /** What that save was of, so the note can say it: "Limits saved". */
  savedSection: SettingsSection | null
}

export const initialSettingsState: SettingsState = {
  settings: null,
  loadError: null,
  trackerError: null,
  identityError: null,
  limitsError: null,
  limitFieldErrors: {},
  accessError: null,
  consentError: null,
  lanError: null,
  saving: null,
  savedAt: null,
  savedSection: null,
}
