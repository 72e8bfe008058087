import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { initialReputationState, type ReputationState } from './initialState'

export interface ReputationActions {
  load(): Promise<void>
}
export type ReputationStore = ReputationState & ReputationActions

export function createReputationStore(bridge: NeuronBridge) {
  return createStore<ReputationStore>()((set) => ({
    ...initialReputationState,
    async load() {
      try {
        set({ view: await bridge.call('reputation.get', {}), error: null })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
  }))
}
