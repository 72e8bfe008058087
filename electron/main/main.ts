// The Electron adapter's composition root: lifecycle, the window, the tray, the menu and IPC. The
// backend (electron/backend) does the work; everything here only connects it to Electron.
import { pathToFileURL } from 'node:url'
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeTheme } from 'electron'
import { type AppBackendHandle, startAppBackend } from './backend'
import { wireAppIpc } from './ipc'
import { appMenuTemplate, type ScreenId } from './menu'
import { appPaths, dataDirOverride } from './paths'
import { createHostingTray } from './tray'
import { createMainWindow } from './window'

const log = (line: string) => console.log(`[neuron] ${line}`)

// Electron emits `ready` only once this entry module (and index.js's import of it) has finished, so
// the pre-ready work runs here at the top level and nothing here may await whenReady (it would hang).
// The data dir is set before the lock: Electron keys the single-instance lock on userData.
const dataDir = dataDirOverride(process.argv, process.env)
if (dataDir) app.setPath('userData', dataDir)

/** The backend once `run` starts it: quitting, even during start-up, waits for it to close. */
let backendStarting: Promise<AppBackendHandle> | undefined
let unwire = () => {}
let destroyTray = () => {}

if (!app.requestSingleInstanceLock()) {
  app.quit()
} else {
  nativeTheme.themeSource = 'system'
  // Closing the window does not stop hosting: the app lives on in the tray until Quit.
  app.on('window-all-closed', () => log('window closed; still hosting from the tray (Quit from the tray or the menu)'))
  quitAfterBackendCloses()
  app
    .whenReady()
    .then(run)
    .catch((error: unknown) => {
      dialog.showErrorBox('Neuron could not start', error instanceof Error ? error.message : String(error))
      app.exit(1)
    })
}

async function run(): Promise<void> {
  let win: BrowserWindow | null = null
  const showWindow = () => {
    if (!win || win.isDestroyed()) win = createMainWindow(appPaths)
    if (win.isMinimized()) win.restore()
    win.show()
    win.focus()
  }
  // The renderer routes on `#/<screen>`; setting the hash switches screens without a reload.
  const showScreen = (screen: ScreenId) => {
    showWindow()
    void win?.webContents.executeJavaScript(`location.hash = ${JSON.stringify(`#/${screen}`)}`)
  }
  app.on('second-instance', showWindow)
  Menu.setApplicationMenu(Menu.buildFromTemplate(appMenuTemplate(process.platform, showScreen)))

  backendStarting = startAppBackend({ dataDir: app.getPath('userData'), log, pickFile: () => pickGguf(win) })
  const backend = await backendStarting
  log(`data in ${app.getPath('userData')}; tracker ${backend.trackerUrl}`)

  unwire = wireAppIpc(
    ipcMain,
    backend,
    () => (win && !win.isDestroyed() ? win.webContents : null),
    pathToFileURL(appPaths.rendererIndex).href,
  )
  const tray = createHostingTray({ icon: appPaths.trayIcon, backend, open: showWindow, quit: () => app.quit(), log })
  destroyTray = () => tray.destroy()
  showWindow()
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) showWindow()
  })
}

/** Quitting waits for the backend to drain and close (it holds sockets, a database and loaded layers). */
function quitAfterBackendCloses(): void {
  let closing = false
  let closed = false
  app.on('before-quit', (event) => {
    if (closed || backendStarting === undefined) return
    event.preventDefault()
    if (closing) return
    closing = true
    destroyTray()
    unwire()
    backendStarting
      .then((backend) => backend.close())
      .catch((error: unknown) => log(`backend close failed: ${String(error)}`))
      .finally(() => {
        closed = true
        app.quit()
      })
  })
}

/** The OS file dialog for a model, over the app's window when it has one. */
async function pickGguf(parent: BrowserWindow | null): Promise<string | null> {
  const options = {
    title: 'Add a GGUF model',
    properties: ['openFile' as const],
    filters: [{ name: 'GGUF models', extensions: ['gguf'] }],
  }
  const picked =
    parent && !parent.isDestroyed()
      ? await dialog.showOpenDialog(parent, options)
      : await dialog.showOpenDialog(options)
  return picked.canceled ? null : (picked.filePaths[0] ?? null)
}
