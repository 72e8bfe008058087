import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { initialSwarmState, type SwarmState } from './initialState'

export interface SwarmActions {
  load(): Promise<void>
  /** Reloads every intervalMs until the returned stop is called (while the screen is visible). */
  poll(intervalMs?: number): () => void
}
export type SwarmStore = SwarmState & SwarmActions

export function createSwarmStore(bridge: NeuronBridge) {
  return createStore<SwarmStore>()((set, get) => ({
    ...initialSwarmState,
    async load() {
      try {
        set({ view: await bridge.call('swarm.get', {}), error: null })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    poll(intervalMs = 3_000) {
      void get().load()
      const timer = setInterval(() => void get().load(), intervalMs)
      return () => clearInterval(timer)
    },
  }))
}
