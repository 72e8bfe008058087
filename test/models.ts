import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
/** The real tiny model shared with the project (never copied into the repo). */
export const STORIES_260K = resolve(REPO_ROOT, '../shared/models/stories260K.gguf')
export const HAVE_STORIES = existsSync(STORIES_260K)
/** Appended to the names of suites that need the shared model, so a skip says why. */
export const NEEDS_STORIES = HAVE_STORIES ? '' : ` (skipped: ${STORIES_260K} is absent)`

/** A fresh temporary directory, removed by the returned cleanup. */
export async function scratchDir(prefix = 'neuron-test-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}
