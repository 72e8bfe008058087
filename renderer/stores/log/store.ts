import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { initialLogState, type LogState } from './initialState'
import { appendLines } from './selectors'

export interface LogActions {
  /** Fetches the lines printed since the last one shown. */
  load(): Promise<void>
  /** Loads every intervalMs until the returned stop is called (while the Log screen is shown). */
  poll(intervalMs?: number): () => void
  setFilter(filter: string): void
}
export type LogStore = LogState & LogActions

export function createLogStore(bridge: NeuronBridge) {
  return createStore<LogStore>()((set, get) => ({
    ...initialLogState,
    async load() {
      const { lines } = get()
      const after = lines[lines.length - 1]?.seq ?? 0
      try {
        const view = await bridge.call('log.get', { after })
        set({
          lines: appendLines(get().lines, view.lines),
          skipped: after === 0 ? view.skipped : get().skipped + view.skipped,
          error: null,
        })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    poll(intervalMs = 1_500) {
      void get().load()
      const timer = setInterval(() => void get().load(), intervalMs)
      return () => clearInterval(timer)
    },
    setFilter(filter) {
      set({ filter })
    },
  }))
}
