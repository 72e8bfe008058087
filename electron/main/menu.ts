import type { MenuItemConstructorOptions } from 'electron'

/** The renderer's screens in sidebar order (renderer/screens/registry.ts); its routes are `#/<id>`. */
export const SCREENS = [
  ['computer', 'This Computer'],
  ['host', 'Host a Model'],
  ['earnings', 'Earnings'],
  ['reputation', 'Reputation'],
  ['chat', 'Chat'],
  ['swarm', 'Swarm'],
  ['api', 'API'],
  ['settings', 'Settings'],
  ['log', 'Log'],
] as const
export type ScreenId = (typeof SCREENS)[number][0]

/**
 * The application menu: Electron's standard roles, plus View → one item per screen. Their
 * CmdOrCtrl+1…9 are shown but not registered (Linux, Windows), so the keys still reach the renderer,
 * which handles them itself; a click goes through `show`.
 */
export function appMenuTemplate(
  platform: NodeJS.Platform,
  show: (screen: ScreenId) => void,
): MenuItemConstructorOptions[] {
  const screens: MenuItemConstructorOptions[] = SCREENS.map(([id, label], i) => ({
    label,
    accelerator: `CmdOrCtrl+${i + 1}`,
    registerAccelerator: false,
    click: () => show(id),
  }))
  return [
    ...(platform === 'darwin' ? [{ role: 'appMenu' } as const] : []),
    { role: 'fileMenu' },
    { role: 'editMenu' },
    {
      label: 'View',
      submenu: [
        ...screens,
        { type: 'separator' },
        { role: 'reload' },
        { role: 'toggleDevTools' },
        { type: 'separator' },
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
      ],
    },
    { role: 'windowMenu' },
  ]
}
