// Where the Electron binary is, for `neuron app` and the Electron e2e (both run outside Electron).
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

/** The Electron binary, or why there is none (the npm package throws when its binary was not downloaded). */
export function electronBinary(): { path: string } | { missing: string } {
  try {
    const path: unknown = createRequire(import.meta.url)('electron')
    if (typeof path !== 'string') return { missing: 'the electron package gives no binary path' }
    if (!existsSync(path)) return { missing: `the Electron binary ${path} is not there` }
    return { path }
  } catch {
    // Its postinstall download is off (allowScripts in package.json): expected wherever GitHub is out of reach.
    return {
      missing:
        `Electron's binary is not installed (its download is switched off in package.json's allowScripts; ` +
        `allow it and reinstall electron to get the window)`,
    }
  }
}
