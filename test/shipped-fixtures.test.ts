// The model the tests and the app use is the repository's own copy: a fresh clone has everything the suite needs.
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { DEFAULT_MODEL } from '../electron/backend/default-model'
import { REPO_ROOT, STORIES_260K, shippedFixture } from './models'

describe('fixtures the repository ships', () => {
  it('stories260K is the committed file resources/models/README.md describes, and the app’s default model', () => {
    expect(STORIES_260K).toBe(`${REPO_ROOT}/resources/models/stories260K.gguf`)
    expect(DEFAULT_MODEL).toBe(STORIES_260K)
    const tracked = execFileSync('git', ['ls-files', '--error-unmatch', 'resources/models/stories260K.gguf'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    expect(tracked.trim()).toBe('resources/models/stories260K.gguf')
    const sha256 = createHash('sha256').update(readFileSync(STORIES_260K)).digest('hex')
    expect(readFileSync(`${REPO_ROOT}/resources/models/README.md`, 'utf8')).toContain(sha256)
  })

  it('a missing one fails the suite, naming the file and how to restore it', () => {
    expect(() => shippedFixture('resources/models/absent.gguf')).toThrow(
      new RegExp(
        String.raw`^resources/models/absent\.gguf is missing from the checkout at .*; the repository ships it: ` +
          String.raw`run \`git checkout -- resources/models/absent\.gguf\`$`,
      ),
    )
  })

  it('no tracked file reads a model from beside the checkout', () => {
    const beside = ['..', 'shared', 'models'].join('/')
    const grep = spawnSync('git', ['grep', '-l', '-F', beside], { cwd: REPO_ROOT, encoding: 'utf8' })
    // git grep exits 1 when nothing matches
    expect({ status: grep.status, files: grep.stdout }).toEqual({ status: 1, files: '' })
  })
})
