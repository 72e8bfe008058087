// The app without Electron: its backend plus the UI server on loopback (`neuron app --headless`,
// `neuron host --ui`).
import { resolve } from 'node:path'
import { AppBackend } from '../electron/backend/backend'
import { builtIndex, serveAppUi } from '../electron/backend/ui-server'
import { PACKAGE_ROOT } from '../gguf/package-root'
import { untilSignal } from '../tracker/main'

/** The package's folder (a checkout, or where npm installed it): Electron's app folder. */
export const REPO_ROOT = PACKAGE_ROOT
/** Where `npm run build` puts the renderer. */
export const RENDERER_DIR = resolve(REPO_ROOT, 'dist/renderer')

export interface BrowserModeOptions {
  readonly dataDir: string
  /** undefined: the saved setting; null: the embedded swarm. */
  readonly trackerUrl?: string | null
  readonly port?: number
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
  const backend = await AppBackend.start({
    dataDir: options.dataDir,
    ...(options.trackerUrl === undefined ? {} : { trackerUrl: options.trackerUrl }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    log: (l) => console.error(`[app] ${l}`),
  })
  try {
    const ui = await serveAppUi(backend, { staticDir, ...(options.port === undefined ? {} : { port: options.port }) })
    try {
      console.log(`Neuron is running at ${ui.openUrl}`)
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
