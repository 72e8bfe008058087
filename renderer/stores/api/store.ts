import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { type ApiAccessState, initialApiAccessState } from './initialState'

export interface ApiAccessActions {
  load(): Promise<void>
  /** Makes a key for the app's account (revoking the one before) and holds it in full until forgetKey. */
  createKey(): Promise<void>
  revokeKey(): Promise<void>
  /** Forgets the full key (the screen closed): from then on only its masked form shows. */
  forgetKey(): void
}
export type ApiAccessStore = ApiAccessState & ApiAccessActions

export function createApiAccessStore(bridge: NeuronBridge) {
  return createStore<ApiAccessStore>()((set) => ({
    ...initialApiAccessState,
    async load() {
      try {
        set({ view: await bridge.call('api.get', {}), error: null })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    async createKey() {
      set({ busy: true })
      try {
        const { apiKey, view } = await bridge.call('api.createKey', {})
        set({ view, freshKey: apiKey, error: null })
      } catch (error) {
        set({ error: shownError(error) })
      } finally {
        set({ busy: false })
      }
    },
    async revokeKey() {
      set({ busy: true })
      try {
        set({ view: await bridge.call('api.revokeKey', {}), freshKey: null, error: null })
      } catch (error) {
        set({ error: shownError(error) })
      } finally {
        set({ busy: false })
      }
    },
    forgetKey() {
      set({ freshKey: null })
    },
  }))
}
