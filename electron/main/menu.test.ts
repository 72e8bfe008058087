import { readFileSync } from 'node:fs'
import type { MenuItemConstructorOptions } from 'electron'
import { describe, expect, it, vi } from 'vitest'
import { appMenuTemplate, SCREENS } from './menu'

const viewItems = (menu: MenuItemConstructorOptions[]) => {
  const view = menu.find((m) => m.label === 'View')
  return Array.isArray(view?.submenu) ? view.submenu : []
}

describe('application menu', () => {
  it('View lists the nine screens with CmdOrCtrl+1…9, and a click shows that screen', () => {
    const show = vi.fn()
    const screens = viewItems(appMenuTemplate('linux', show)).filter((m) => m.accelerator !== undefined)
    expect(screens.map((m) => [m.label, m.accelerator])).toEqual([
      ['This Computer', 'CmdOrCtrl+1'],
      ['Host a Model', 'CmdOrCtrl+2'],
      ['Earnings', 'CmdOrCtrl+3'],
      ['Reputation', 'CmdOrCtrl+4'],
      ['Chat', 'CmdOrCtrl+5'],
      ['Swarm', 'CmdOrCtrl+6'],
      ['API', 'CmdOrCtrl+7'],
      ['Settings', 'CmdOrCtrl+8'],
      ['Log', 'CmdOrCtrl+9'],
    ])
    for (const item of screens) (item.click as () => void)()
    expect(show.mock.calls.map(([id]) => id)).toEqual([
      'computer',
      'host',
      'earnings',
      'reputation',
      'chat',
      'swarm',
      'api',
      'settings',
      'log',
    ])
  })

  it('has the app menu on macOS only', () => {
    expect(appMenuTemplate('darwin', () => {})[0]).toEqual({ role: 'appMenu' })
    expect(appMenuTemplate('win32', () => {}).some((m) => m.role === 'appMenu')).toBe(false)
  })

  it("names the renderer's screens in its order (renderer/screens/registry.ts)", () => {
    const registry = readFileSync(new URL('../../renderer/screens/registry.ts', import.meta.url), 'utf8')
    const ids = [...registry.matchAll(/\{ id: '([a-z]+)'/g)].map((m) => m[1])
    expect(SCREENS.map(([id]) => id)).toEqual(ids)
  })
})
