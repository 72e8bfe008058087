import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The app's root: the repository in development, app.asar (or app/) when packaged. */
const root = fileURLToPath(new URL('../..', import.meta.url))

export const appPaths = {
  root,
  rendererIndex: join(root, 'dist', 'renderer', 'index.html'),
  preload: join(root, 'dist', 'electron', 'preload.cjs'),
  trayIcon: join(root, 'resources', 'tray.png'),
  windowIcon: join(root, 'resources', 'icon.png'),
}

/**
 * A data dir chosen on the command line (`--data-dir <dir>` or `--data-dir=<dir>`) or in NEURON_DATA_DIR,
 * so tests and second profiles never touch the user's; null: Electron's userData.
 */
export function dataDirOverride(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): string | null {
  const chosen = (() => {
    for (const [i, arg] of argv.entries()) {
      if (arg.startsWith('--data-dir=')) return arg.slice('--data-dir='.length)
      if (arg === '--data-dir') return argv[i + 1]
    }
    return env.NEURON_DATA_DIR
  })()
  // app.setPath needs an absolute path.
  return chosen ? resolve(chosen) : null
}
