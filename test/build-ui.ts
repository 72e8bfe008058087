import { join } from 'node:path'
import { build } from 'vite'
import { REPO_ROOT } from './models'

/**
 * Builds the renderer into dist/renderer, as `npm run build` does, so a spec never runs a stale UI; or into
 * `outDir`, for a spec that serves its own build (NEURON_RENDERER_DIR) while other checkouts rebuild theirs.
 */
export async function buildUi(outDir?: string): Promise<void> {
  await build({
    configFile: join(REPO_ROOT, 'vite.config.ts'),
    logLevel: 'warn',
    ...(outDir === undefined ? {} : { build: { outDir, emptyOutDir: true } }),
  })
}
