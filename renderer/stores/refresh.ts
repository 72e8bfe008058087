import type { StoreApi } from 'zustand/vanilla'
import type { ComputerStore } from './computer/store'
import { showsPicker } from './hosting/selectors'
import type { HostingStore } from './hosting/store'
import type { SettingsStore } from './settings/store'

/** The stores whose views go stale when settings or hosting change (typed one by one, as in connection/catchUp.ts). */
export interface RefreshStores {
  settings: StoreApi<SettingsStore>
  hosting: StoreApi<HostingStore>
  computer: StoreApi<ComputerStore>
}

/**
 * Asks again for what a change made stale, so a screen never shows the world before it: a saved setting (limits,
 * tracker) changes what this computer may serve and where, so the Computer view, the model list and the placement
 * preview are fetched again; a stop (or a failure) puts the picker back, and its preview was computed while this
 * computer still served. Returns the unsubscribe.
 */
export function refreshOnChanges(stores: RefreshStores): () => void {
  const offSettings = stores.settings.subscribe((state, previous) => {
    if (previous.settings === null || state.settings === previous.settings || state.savedAt === previous.savedAt) return
    if (stores.computer.getState().view !== null) void stores.computer.getState().load()
    // The tracker may have changed: its model list first, so a model it does not list is not previewed.
    void stores.hosting
      .getState()
      .loadModels()
      .then(() => stores.hosting.getState().refreshPreview())
  })
  const offHosting = stores.hosting.subscribe((state, previous) => {
    if (previous.status === null || showsPicker(previous.status) || !showsPicker(state.status)) return
    void stores.hosting.getState().refreshPreview()
  })
  return () => {
    offSettings()
    offHosting()
  }
}
