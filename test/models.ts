import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))

/**
 * A fixture the repository ships, by its path from the repository root. A test never skips for one: if it is
 * missing the checkout is broken, so every suite that imports it fails here, saying which file and how to restore it.
 */
export function shippedFixture(pathInRepo: string): string {
  const path = resolve(REPO_ROOT, pathInRepo)
  if (!existsSync(path)) {
    throw new Error(
      `${pathInRepo} is missing from the checkout at ${REPO_ROOT}; the repository ships it: run \`git checkout -- ` +
        `${pathInRepo}\``,
    )
  }
  return path
}

/** The real tiny model the repository ships (resources/models/README.md): the tests' and the app's default model. */
export const STORIES_260K = shippedFixture('resources/models/stories260K.gguf')

/** A fresh temporary directory, removed by the returned cleanup. */
export async function scratchDir(prefix = 'neuron-test-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}
