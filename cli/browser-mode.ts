// The app without Electron: its backend plus the UI server on loopback (`neuron app --headless`,
// `neuron host --ui`).
import { resolve } from 'node:path'
import { AppBackend } from '../electron/backend/backend'
import { serveAtSavedAddress } from '../electron/backend/fixed-address'
import { builtIndex } from '../electron/backend/ui-server'
import { PACKAGE_ROOT } from '../gguf/package-root'
import { untilSignal } from '../tracker/main'
import { openBrowser } from './open-browser'

/** The package's folder (a checkout, or where npm installed it): Electron's app folder. */
export const REPO_ROOT = PACKAGE_ROOT
/** Where `npm run build` puts the renderer; NEURON_RENDERER_DIR serves one built elsewhere (a spec's own build). */
export const RENDERER_DIR = resolve(process.env.NEURON_RENDERER_DIR || resolve(REPO_ROOT, 'dist/renderer'))

export interface BrowserModeOptions {
  readonly dataDir: string
  /** undefined: the saved setting; null: the embedded swarm. */
  readonly trackerUrl?: string | null
  /** This run's port, not saved (0: a free one); default the saved one, else a free one that is then saved. */
  readonly port?: number
  /** Opens the link in the default browser once the UI is up (default false: the link is printed only). */
  readonly openBrowser?: boolean
  readonly threads?: number
  /** The built renderer; default dist/renderer. */
  readonly staticDir?: string
  /** Once the UI is up, e.g. start hosting. */
  readonly afterStart?: (backend: AppBackend) => Promise<void>
}

/**
 * The app without Electron: the backend plus the UI server on loopback, until Ctrl-C or SIGTERM.
 * Prints one line with the address to open.
 */
export async function runBrowserMode(options: BrowserModeOptions): Promise<number> {
  const staticDir = options.staticDir ?? RENDERER_DIR
  await builtIndex(staticDir)
  const stop = untilSignal()
  const log = (l: string) => console.error(`[app] ${l}`)
  const backend = await AppBackend.start({
    dataDir: options.dataDir,
    ...(options.trackerUrl === undefined ? {} : { trackerUrl: options.trackerUrl }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    log,
  })
  try {
    const ui = await serveAtSavedAddress(backend, {
      staticDir,
      log,
      ...(options.port === undefined ? {} : { port: options.port }),
    })
    try {
      console.log(`Neuron is running at ${ui.openUrl}`)
      if (options.openBrowser === true) openBrowser(ui.openUrl, log)
      await options.afterStart?.(backend)
      console.error(`[app] stopping on ${await stop}`)
    } finally {
      await ui.close()
    }
  } finally {
    await backend.close()
  }
  return 0
}
