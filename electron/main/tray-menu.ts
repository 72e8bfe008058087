import type { MenuItemConstructorOptions } from 'electron'
import type { HostingPhase } from '../../protocol/app'

export interface TrayActions {
  open(): void
  pause(): void
  resume(): void
  quit(): void
}

/** The tray menu for the current hosting phase (null: not known yet). */
export function trayMenuTemplate(phase: HostingPhase | null, actions: TrayActions): MenuItemConstructorOptions[] {
  const hosting: MenuItemConstructorOptions =
    phase === 'paused'
      ? { label: 'Resume hosting', click: () => actions.resume() }
      : { label: 'Pause hosting', enabled: phase === 'serving', click: () => actions.pause() }
  return [
    { label: 'Open Neuron', click: () => actions.open() },
    { type: 'separator' },
    { label: trayStatusLine(phase), enabled: false },
    hosting,
    { type: 'separator' },
    { label: 'Quit Neuron', click: () => actions.quit() },
  ]
}

export function trayStatusLine(phase: HostingPhase | null): string {
  switch (phase) {
    case null:
    case 'idle':
      return 'Not hosting'
    case 'downloading':
      return 'Downloading layers…'
    case 'loading':
      return 'Loading layers…'
    case 'serving':
      return 'Hosting: serving'
    case 'paused':
      return 'Hosting paused'
    case 'stopping':
      return 'Stopping…'
    case 'failed':
      return 'Hosting failed'
  }
}
