import type { MenuItemConstructorOptions } from 'electron'
import { describe, expect, it, vi } from 'vitest'
import { trayMenuTemplate } from './tray-menu'

const actions = () => ({ open: vi.fn(), pause: vi.fn(), resume: vi.fn(), quit: vi.fn() })
const item = (menu: MenuItemConstructorOptions[], label: string) => {
  const found = menu.find((m) => m.label === label)
  if (!found) throw new Error(`no "${label}" in ${menu.map((m) => m.label ?? m.type).join(', ')}`)
  return found
}
const click = (entry: MenuItemConstructorOptions) => (entry.click as () => void)()

describe('tray menu', () => {
  it('pauses hosting while serving', () => {
    const a = actions()
    const menu = trayMenuTemplate('serving', a)
    expect(item(menu, 'Pause hosting').enabled).toBe(true)
    click(item(menu, 'Pause hosting'))
    expect(a.pause).toHaveBeenCalledOnce()
  })

  it('resumes hosting while paused', () => {
    const a = actions()
    const menu = trayMenuTemplate('paused', a)
    expect(menu.some((m) => m.label === 'Pause hosting')).toBe(false)
    click(item(menu, 'Resume hosting'))
    expect(a.resume).toHaveBeenCalledOnce()
  })

  it('offers no pause while not serving, but always opens and quits', () => {
    for (const phase of [null, 'idle', 'downloading', 'loading', 'failed'] as const) {
      const a = actions()
      const menu = trayMenuTemplate(phase, a)
      expect(item(menu, 'Pause hosting').enabled).toBe(false)
      click(item(menu, 'Open Neuron'))
      click(item(menu, 'Quit Neuron'))
      expect(a.open).toHaveBeenCalledOnce()
      expect(a.quit).toHaveBeenCalledOnce()
    }
  })
})
