import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { type ApiAccessState, initialApiAccessState } from './initialState'

export interface ApiAccessActions {
  load(): Promise<void>
  /** Reloads the request log (the screen refreshes it while open, and on demand). */
  loadRequests(): Promise<void>
  /** Makes a key for the app's account; with one in use, asks first (a new key revokes it). */
  createKey(): Promise<void>
  /** Asks before revoking the key in use. */
  revokeKey(): void
  /** The user said yes: the key is revoked, or replaced. */
  confirm(): Promise<void>
  /** The user said no: the key in use keeps working. */
  cancel(): void
  /**
   * Turns the home-network switch (Settings' too): the API then listens beyond this computer, still asking for the key.
   */
  setLanOpen(open: boolean): Promise<void>
  /** Forgets the full key (the screen closed): from then on only its masked form shows. */
  forgetKey(): void
}
export type ApiAccessStore = ApiAccessState & ApiAccessActions

export function createApiAccessStore(bridge: NeuronBridge) {
  return createStore<ApiAccessStore>()((set, get) => {
    /** Runs a change with the buttons disabled, showing what went wrong. */
    const acting = async (change: () => Promise<Partial<ApiAccessState>>) => {
      set({ busy: true })
      try {
        set({ ...(await change()), error: null })
      } catch (error) {
        set({ error: shownError(error) })
      } finally {
        set({ busy: false })
      }
    }
    const makeKey = () =>
      acting(async () => {
        const { apiKey, view } = await bridge.call('api.createKey', {})
        return { view, freshKey: apiKey }
      })
    return {
      ...initialApiAccessState,
      async load() {
        try {
          set({ view: await bridge.call('api.get', {}), error: null })
        } catch (error) {
          set({ error: shownError(error) })
        }
      },
      async loadRequests() {
        try {
          set({ requests: (await bridge.call('api.requests', {})).requests })
        } catch (error) {
          set({ error: shownError(error) })
        }
      },
      async createKey() {
        if (get().view?.key != null) set({ confirming: 'replace' })
        else await makeKey()
      },
      revokeKey() {
        set({ confirming: 'revoke' })
      },
      async confirm() {
        const what = get().confirming
        set({ confirming: null })
        if (what === 'replace') await makeKey()
        else if (what === 'revoke')
          await acting(async () => ({ view: await bridge.call('api.revokeKey', {}), freshKey: null }))
      },
      cancel() {
        set({ confirming: null })
      },
      async setLanOpen(open) {
        await acting(async () => {
          await bridge.call('settings.update', { lanOpen: open })
          return { view: await bridge.call('api.get', {}) }
        })
      },
      forgetKey() {
        set({ freshKey: null })
      },
    }
  })
}
