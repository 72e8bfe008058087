import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { type ComputerState, initialComputerState } from './initialState'

export interface ComputerActions {
  /** refresh: measure the hardware again instead of using the cached profile. */
  load(refresh?: boolean): Promise<void>
}
export type ComputerStore = ComputerState & ComputerActions

export function createComputerStore(bridge: NeuronBridge) {
  return createStore<ComputerStore>()((set) => ({
    ...initialComputerState,
    async load(refresh = false) {
      set({ loading: true, error: null })
      try {
        set({ view: await bridge.call('computer.get', { refresh }), loading: false })
      } catch (error) {
        set({ error: shownError(error), loading: false })
      }
    },
  }))
}
