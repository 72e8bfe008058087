import { join } from 'node:path'
import { build } from 'vite'
import { REPO_ROOT } from './models'

/** Builds the renderer into dist/renderer, as `npm run build` does, so a spec never runs a stale UI. */
export async function buildUi(): Promise<void> {
  await build({ configFile: join(REPO_ROOT, 'vite.config.ts'), logLevel: 'warn' })
}
