import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { type EarningsState, initialEarningsState } from './initialState'

export interface EarningsActions {
  load(): Promise<void>
  /** Shows each settled receipt's balance at once, and reloads the tables once a burst of receipts is over. */
  subscribe(debounceMs?: number): () => void
}
export type EarningsStore = EarningsState & EarningsActions

export function createEarningsStore(bridge: NeuronBridge) {
  return createStore<EarningsStore>()((set, get) => ({
    ...initialEarningsState,
    async load() {
      try {
        set({ earnings: await bridge.call('earnings.get', {}), error: null })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    subscribe(debounceMs = 800) {
      let timer: ReturnType<typeof setTimeout> | null = null
      // The receipt's earnedMicro is not shown: the tables come from earnings.get, the one account of record.
      const off = bridge.on('earnings.receipt', (receipt) => {
        const { earnings } = get()
        if (earnings !== null && receipt.ok && receipt.hostId === earnings.hostId)
          set({
            earnings: {
              ...earnings,
              balanceMicro: receipt.balanceMicro,
              pendingMicro: receipt.pendingMicro ?? earnings.pendingMicro,
            },
          })
        if (timer !== null) clearTimeout(timer)
        timer = setTimeout(() => {
          timer = null
          void get().load()
        }, debounceMs)
      })
      return () => {
        off()
        if (timer !== null) clearTimeout(timer)
      }
    },
  }))
}
