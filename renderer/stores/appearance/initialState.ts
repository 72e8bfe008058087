/** How the app looks: this browser's or window's preference, not a setting of the host (kept in localStorage). */
export type Theme = 'system' | 'light' | 'dark'

export interface AppearanceState {
  theme: Theme
  /** The sidebar as icons only, by choice; narrow windows fold it whatever this says. */
  sidebarCollapsed: boolean
  /** The sidebar drawn over the screen on a narrow window (its menu button opened it). */
  navOpen: boolean
}

export const initialAppearanceState: AppearanceState = { theme: 'system', sidebarCollapsed: false, navOpen: false }
