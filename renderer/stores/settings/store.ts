import { createStore } from 'zustand/vanilla'
import { parseAllowedKeys } from '../../../protocol/allowed-keys'
import type { NeuronBridge, Settings, SettingsUpdate } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { initialSettingsState, type SettingsSection, type SettingsState } from './initialState'
import { type LimitsForm, limitsFromForm } from './limitsForm'
import { trackerUrlProblem } from './selectors'

export interface SettingsActions {
  load(): Promise<void>
  /**
   * Empty text means the embedded private swarm; `hostingOnSwitch`:
   * what the user chose for hosting on the tracker left.
   */
  saveTracker(text: string, hostingOnSwitch?: SettingsUpdate['hostingOnSwitch']): Promise<void>
  /**
   * Whether the app could switch to the typed tracker: a full http(s) URL (checked here) at which a tracker answers
   * (asked of the backend); trackerError says why not. Empty text, the embedded swarm, always can.
   */
  checkTracker(text: string): Promise<boolean>
  /** Sends only the limits the form changed from the loaded settings. */
  saveLimits(form: LimitsForm): Promise<void>
  importIdentity(pem: string): Promise<void>
  /** The embedded swarm's allow-list, one public key a line (# comments); empty text opens it to anyone. */
  saveAllowedKeys(text: string): Promise<void>
  /** Opens the embedded swarm to the home network (its tracker restarts on every interface), or closes it. */
  saveLanOpen(open: boolean): Promise<void>
  /**
   * Agrees to chat on the public tracker in force, knowing its hosts see prompts and answers (asked once per tracker).
   */
  consent(): Promise<void>
  /** The private key PEM for a backup file, or null (and identityError) when the backend refused. */
  exportIdentity(): Promise<{ pem: string; publicKey: string } | null>
}
export type SettingsStore = SettingsState & SettingsActions

const ERROR_FIELD = {
  tracker: 'trackerError',
  identity: 'identityError',
  limits: 'limitsError',
  access: 'accessError',
  consent: 'consentError',
  lan: 'lanError',
} as const

export function createSettingsStore(bridge: NeuronBridge, now: () => number = Date.now) {
  return createStore<SettingsStore>()((set, get) => {
    const fail = (section: SettingsSection, message: string, code = 'bad_request') =>
      set({ [ERROR_FIELD[section]]: { code, message } })
    /** On any error the previous settings stay: the backend changes nothing either. */
    const save = async (section: SettingsSection, run: () => Promise<Settings>) => {
      set({ saving: section, [ERROR_FIELD[section]]: null })
      try {
        set({ settings: await run(), saving: null, savedAt: now(), savedSection: section })
      } catch (error) {
        set({ saving: null, [ERROR_FIELD[section]]: shownError(error) })
      }
    }
    // A change made elsewhere (the API tab's switch, a pairing, another window) shows here at once.
    bridge.on('settings.changed', (settings) => set({ settings }))
    return {
      ...initialSettingsState,
      async load() {
        try {
          set({ settings: await bridge.call('settings.get', {}), loadError: null })
        } catch (error) {
          set({ loadError: shownError(error) })
        }
      },
      async saveTracker(text, hostingOnSwitch) {
        const trimmed = text.trim()
        const problem = trackerUrlProblem(trimmed)
        if (problem !== null) return fail('tracker', problem)
        const trackerUrl = trimmed === '' ? null : trimmed
        await save('tracker', () =>
          bridge.call(
            'settings.update',
            hostingOnSwitch === undefined ? { trackerUrl } : { trackerUrl, hostingOnSwitch },
          ),
        )
      },
      async checkTracker(text) {
        const trimmed = text.trim()
        const problem = trackerUrlProblem(trimmed)
        if (problem !== null) {
          fail('tracker', problem)
          return false
        }
        if (trimmed === '') return true
        set({ saving: 'tracker', trackerError: null })
        try {
          await bridge.call('settings.checkTracker', { trackerUrl: trimmed })
          set({ saving: null })
          return true
        } catch (error) {
          set({ saving: null, trackerError: shownError(error) })
          return false
        }
      },
      async saveLimits(form) {
        const loaded = get().settings
        if (loaded === null) return fail('limits', 'The settings have not loaded yet; wait for them, then save again.')
        const parsed = limitsFromForm(form, loaded.limits)
        if ('errors' in parsed) return set({ limitsError: null, limitFieldErrors: parsed.errors })
        set({ limitFieldErrors: {} })
        // Nothing changed: the settings already are what the form shows.
        if (Object.keys(parsed.changes).length === 0)
          return set({ limitsError: null, savedAt: now(), savedSection: 'limits' })
        await save('limits', () => bridge.call('settings.update', { limits: parsed.changes }))
        // The backend refuses a memory limit under what the hosted range needs: that is the memory field's error.
        const refused = get().limitsError
        if (refused?.code === 'memory_limit')
          set({ limitsError: null, limitFieldErrors: { memoryGb: refused.message } })
      },
      async importIdentity(pem) {
        const trimmed = pem.trim()
        if (!trimmed.startsWith('-----BEGIN'))
          return fail(
            'identity',
            'Paste a PEM private key: the text from -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----.',
          )
        await save('identity', () => bridge.call('identity.import', { pem: trimmed }))
      },
      async saveAllowedKeys(text) {
        let keys: string[]
        try {
          keys = parseAllowedKeys(text, 'The list')
        } catch (error) {
          return fail('access', error instanceof Error ? error.message : String(error))
        }
        await save('access', () => bridge.call('settings.update', { allowedKeys: keys.length === 0 ? null : keys }))
      },
      async saveLanOpen(open) {
        await save('lan', () => bridge.call('settings.update', { lanOpen: open }))
      },
      async consent() {
        const trackerUrl = get().settings?.trackerUrl ?? null
        if (trackerUrl !== null) await save('consent', () => bridge.call('settings.consent', { trackerUrl }))
      },
      async exportIdentity() {
        set({ identityError: null })
        try {
          return await bridge.call('identity.export', {})
        } catch (error) {
          set({ identityError: shownError(error) })
          return null
        }
      },
    }
  })
}
