import { Menu, nativeImage, Tray } from 'electron'
import { HostingStatus } from '../../protocol/app'
import type { AppBackendHandle } from './backend'
import { trayMenuTemplate, trayStatusLine } from './tray-menu'

export interface HostingTrayOptions {
  icon: string
  backend: Pick<AppBackendHandle, 'call' | 'onEvent'>
  open(): void
  quit(): void
  log(line: string): void
}

/** The tray icon: opens the window, pauses or resumes hosting, quits; its menu follows hosting.status. */
export function createHostingTray(options: HostingTrayOptions): { destroy(): void } {
  const tray = new Tray(nativeImage.createFromPath(options.icon))
  tray.setToolTip('Neuron')
  const hosting = async (method: 'hosting.pause' | 'hosting.resume' | 'hosting.status') => {
    const ack = await options.backend.call(method, {})
    if (!ack.ok) return options.log(`tray: ${method} failed: ${ack.error.message}`)
    const status = HostingStatus.safeParse(ack.value)
    if (status.success) render(status.data.phase)
  }
  const actions = {
    open: options.open,
    quit: options.quit,
    pause: () => void hosting('hosting.pause'),
    resume: () => void hosting('hosting.resume'),
  }
  const render = (phase: HostingStatus['phase'] | null) => {
    tray.setContextMenu(Menu.buildFromTemplate(trayMenuTemplate(phase, actions)))
    tray.setToolTip(`Neuron — ${trayStatusLine(phase)}`)
  }
  render(null)
  tray.on('click', options.open)
  const unsubscribe = options.backend.onEvent((event, data) => {
    if (event !== 'hosting.status') return
    const status = HostingStatus.safeParse(data)
    if (status.success) render(status.data.phase)
  })
  void hosting('hosting.status')
  return {
    destroy() {
      unsubscribe()
      tray.destroy()
    },
  }
}
