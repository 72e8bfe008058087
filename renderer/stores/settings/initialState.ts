import type { Settings } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'

export type SettingsSection = 'tracker' | 'identity' | 'limits'

export interface SettingsState {
  settings: Settings | null
  loadError: ShownError | null
  trackerError: ShownError | null
  identityError: ShownError | null
  limitsError: ShownError | null
  /** The section a save is running for, so its button can show it. */
  saving: SettingsSection | null
  /** When the last save succeeded (ms), for the transient "Saved" note. */
  savedAt: number | null
}

export const initialSettingsState: SettingsState = {
  settings: null,
  loadError: null,
  trackerError: null,
  identityError: null,
  limitsError: null,
  saving: null,
  savedAt: null,
}
