import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import type { LanView } from '../../../protocol/lan'
import { shownError } from '../../api/errorText'
import { initialLanState, type LanState } from './initialState'

export interface LanActions {
  load(): Promise<void>
  /** Follows lan.changed, and reloads every intervalMs (a lost app ages out), until the returned stop is called. */
  follow(intervalMs?: number): () => void
  pair(key: string): Promise<void>
  confirm(pairingId: string): Promise<void>
  refuse(pairingId: string): Promise<void>
}
export type LanStore = LanState & LanActions

export function createLanStore(bridge: NeuronBridge) {
  return createStore<LanStore>()((set, get) => {
    const act = async (busy: string, run: () => Promise<LanView>) => {
      set({ busy, error: null })
      try {
        set({ view: await run(), busy: null })
      } catch (error) {
        set({ busy: null, error: shownError(error) })
      }
    }
    return {
      ...initialLanState,
      async load() {
        try {
          set({ view: await bridge.call('lan.get', {}) })
        } catch (error) {
          set({ error: shownError(error) })
        }
      },
      follow(intervalMs = 3_000) {
        void get().load()
        const off = bridge.on('lan.changed', (view) => set({ view }))
        const timer = setInterval(() => void get().load(), intervalMs)
        return () => {
          off()
          clearInterval(timer)
        }
      },
      pair: (key) => act(key, () => bridge.call('lan.pair', { key })),
      confirm: (pairingId) => act(pairingId, () => bridge.call('lan.confirm', { pairingId })),
      refuse: (pairingId) => act(pairingId, () => bridge.call('lan.refuse', { pairingId })),
    }
  })
}
