import type { AppearanceState, Theme } from './initialState'

/** The saved form: anything else in storage (an older or edited value) reads as the default. */
export function parseAppearance(saved: string | null): Pick<AppearanceState, 'theme' | 'sidebarCollapsed'> {
  let value: unknown = null
  try {
    value = saved === null ? null : JSON.parse(saved)
  } catch {
    value = null
  }
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  const theme = record.theme === 'light' || record.theme === 'dark' ? record.theme : 'system'
  return { theme, sidebarCollapsed: record.sidebarCollapsed === true }
}

/** The theme drawn: the chosen one, or the system's. */
export function resolvedTheme(theme: Theme, systemDark: boolean): 'light' | 'dark' {
  return theme === 'system' ? (systemDark ? 'dark' : 'light') : theme
}

const NEXT: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' }

/** The theme button cycles system → light → dark. */
export function nextTheme(theme: Theme): Theme {
  return NEXT[theme]
}

/** The theme button's label: what is drawn now and what a click does. */
export function themeLabel(theme: Theme): string {
  const now = theme === 'system' ? 'as the system' : theme
  return `Theme: ${now} (click for ${NEXT[theme] === 'system' ? 'the system’s' : NEXT[theme]})`
}
