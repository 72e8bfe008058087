import { pathToFileURL } from 'node:url'
import { BrowserWindow, nativeTheme, shell } from 'electron'
import { judgeNavigation } from './navigation'

export interface MainWindowPaths {
  rendererIndex: string
  preload: string
  windowIcon: string
}

/** The app's one window: isolated, sandboxed, no Node; links leave for the OS browser. */
export function createMainWindow(paths: MainWindowPaths): BrowserWindow {
  const win = new BrowserWindow({
    title: 'Neuron',
    width: 1280,
    height: 820,
    minWidth: 960,
    minHeight: 620,
    show: false,
    icon: paths.windowIcon,
    // Matches the renderer's first paint in either scheme, so opening does not flash white.
    backgroundColor: nativeTheme.shouldUseDarkColors ? '#0f1115' : '#ffffff',
    webPreferences: {
      preload: paths.preload,
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
      webSecurity: true,
      spellcheck: false,
    },
  })
  const appUrl = pathToFileURL(paths.rendererIndex).href
  const openOutside = (url: string) => {
    if (judgeNavigation(url, appUrl) === 'external') void shell.openExternal(url)
  }
  win.webContents.setWindowOpenHandler(({ url }) => {
    openOutside(url)
    return { action: 'deny' }
  })
  win.webContents.on('will-navigate', (event, url) => {
    if (judgeNavigation(url, appUrl) === 'app') return
    event.preventDefault()
    openOutside(url)
  })
  win.webContents.on('will-attach-webview', (event) => event.preventDefault())
  win.once('ready-to-show', () => win.show())
  void win.loadFile(paths.rendererIndex)
  return win
}
