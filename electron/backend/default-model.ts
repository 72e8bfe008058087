import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../gguf/package-root'

const FILE = 'stories260K.gguf'

/**
 * Where the embedded default model is: in a packaged app, the copy Forge ships in its resources folder
 * (forge.config.ts, `extraResource`); from a checkout, the repository's own copy in resources/models/.
 * `resourcesPath` is Electron's `process.resourcesPath` (undefined under Node).
 */
export function defaultModelPath(
  resourcesPath: string | undefined = (process as { resourcesPath?: string }).resourcesPath,
): string {
  const packaged = resourcesPath === undefined ? undefined : join(resourcesPath, FILE)
  if (packaged !== undefined && existsSync(packaged)) return packaged
  return join(PACKAGE_ROOT, 'resources', 'models', FILE)
}

/** The embedded default: the demo's and the app's private swarm's model. */
export const DEFAULT_MODEL = defaultModelPath()
