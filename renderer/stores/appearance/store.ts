import { createStore } from 'zustand/vanilla'
import { type AppearanceState, initialAppearanceState, type Theme } from './initialState'
import { parseAppearance } from './selectors'

export const APPEARANCE_KEY = 'neuron.appearance'

export interface AppearanceActions {
  setTheme(theme: Theme): void
  toggleSidebar(): void
  setNavOpen(open: boolean): void
}
export type AppearanceStore = AppearanceState & AppearanceActions

/** `storage`: where the choice is kept (localStorage; a test's own). */
export function createAppearanceStore(storage: Pick<Storage, 'getItem' | 'setItem'>) {
  const save = (s: AppearanceState) => {
    try {
      storage.setItem(APPEARANCE_KEY, JSON.stringify({ theme: s.theme, sidebarCollapsed: s.sidebarCollapsed }))
    } catch {
      // Storage full or denied (a private window): the choice holds for this page only.
    }
  }
  return createStore<AppearanceStore>()((set, get) => ({
    ...initialAppearanceState,
    ...parseAppearance(storage.getItem(APPEARANCE_KEY)),
    setTheme(theme) {
      set({ theme })
      save(get())
    },
    toggleSidebar() {
      set({ sidebarCollapsed: !get().sidebarCollapsed })
      save(get())
    },
    setNavOpen(navOpen) {
      set({ navOpen })
    },
  }))
}
