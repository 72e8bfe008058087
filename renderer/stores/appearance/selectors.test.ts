import { describe, expect, it } from 'vitest'
import { nextTheme, parseAppearance, resolvedTheme, themeLabel } from './selectors'
import { createAppearanceStore } from './store'

describe('appearance', () => {
  it('reads a saved choice, and anything malformed as the default', () => {
    expect(parseAppearance('{"theme":"dark","sidebarCollapsed":true}')).toEqual({
      theme: 'dark',
      sidebarCollapsed: true,
    })
    for (const bad of [null, '', 'not json', '42', '{"theme":"purple","sidebarCollapsed":"yes"}'])
      expect(parseAppearance(bad)).toEqual({ theme: 'system', sidebarCollapsed: false })
  })

  it('follows the system unless a theme is chosen, and the button cycles through all three', () => {
    expect(resolvedTheme('system', true)).toBe('dark')
    expect(resolvedTheme('system', false)).toBe('light')
    expect(resolvedTheme('light', true)).toBe('light')
    expect([nextTheme('system'), nextTheme('light'), nextTheme('dark')]).toEqual(['light', 'dark', 'system'])
    expect(themeLabel('dark')).toContain('dark')
  })

  it('keeps the choice in storage for the next start', () => {
    const kept = new Map<string, string>()
    const storage = { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => kept.set(k, v) }
    const store = createAppearanceStore(storage)
    store.getState().setTheme('dark')
    store.getState().toggleSidebar()
    expect(createAppearanceStore(storage).getState()).toMatchObject({ theme: 'dark', sidebarCollapsed: true })
  })
})
