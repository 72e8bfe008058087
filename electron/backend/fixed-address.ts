// The app's address stays the same from one start to the next: open tabs reconnect, bookmarks and API
// clients keep working. Ports are chosen free once and saved (settings.json); the UI key lives in its own file.
import { randomBytes } from 'node:crypto'
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { SettingsStore } from './settings-store'
import { type AppCalls, type AppUiServer, serveAppUi } from './ui-server'

export const UI_KEY_FILE = 'ui-key'
/** Only the owner may read the key: anyone who has it drives this host. */
const KEY_MODE = 0o600

/**
 * Starts something on `preferred` (a saved port), or on a free one when there is none yet or it is
 * taken, saying so: a port another program took since the last start is no reason not to start.
 */
export async function onPreferredPort<T>(
  preferred: number | null,
  what: string,
  start: (port: number) => Promise<T>,
  log: (line: string) => void,
): Promise<T> {
  if (preferred === null) return start(0)
  try {
    return await start(preferred)
  } catch (error) {
    if (!portTaken(error)) throw error
    log(
      `${what}'s saved port ${preferred} is taken (another program, or another Neuron, listens there); using ` +
        `another one, saved for the next starts`,
    )
    return start(0)
  }
}

function portTaken(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'EADDRINUSE' || code === 'EACCES'
}

/**
 * The browser mode's key, the same at every start so a bookmarked or open tab stays admitted:
 * `<dataDir>/ui-key`, created on first use with mode 0600 (and put back to 0600 if it was opened up).
 */
export async function loadUiKey(dataDir: string, log: (line: string) => void = () => {}): Promise<string> {
  const path = join(dataDir, UI_KEY_FILE)
  const saved = (await readFile(path, 'utf8').catch(() => '')).trim()
  if (/^[\w-]{32,}$/.test(saved)) {
    const mode = (await stat(path)).mode & 0o777
    if (process.platform !== 'win32' && mode !== KEY_MODE) {
      await chmod(path, KEY_MODE)
      log(`${path} was readable by others (mode ${mode.toString(8)}); set back to 600`)
    }
    return saved
  }
  if (saved !== '') log(`${path} does not hold a key; writing a new one (old links and bookmarks need the new link)`)
  const key = randomBytes(24).toString('base64url')
  await writeFile(path, `${key}\n`, { mode: KEY_MODE })
  await chmod(path, KEY_MODE)
  return key
}

/** What serveAtSavedAddress needs of the backend. */
export interface SavedAddressBackend extends AppCalls {
  readonly dataDir: string
  readonly settings: SettingsStore
}

/**
 * The browser mode's UI server at the address of the last start: the saved port (another free one,
 * saved, when it is taken) and the saved key. `port`: this run's, not saved (0: a free one).
 */
export async function serveAtSavedAddress(
  backend: SavedAddressBackend,
  options: { staticDir: string; port?: number; log: (line: string) => void },
): Promise<AppUiServer> {
  const { settings: store, dataDir } = backend
  const key = await loadUiKey(dataDir, options.log)
  const keyFile = join(dataDir, UI_KEY_FILE)
  const serve = (port: number) => serveAppUi(backend, { staticDir: options.staticDir, port, key, keyFile })
  if (options.port !== undefined) return serve(options.port)
  const ui = await onPreferredPort(store.value.uiPort, 'the UI', serve, options.log)
  const port = Number(new URL(ui.url).port)
  if (store.value.uiPort !== port) await store.update({ uiPort: port })
  return ui
}
