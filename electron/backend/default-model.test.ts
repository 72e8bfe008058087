import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import builder from '../../electron-builder.config'
import config, { DEFAULT_MODEL_LICENSE, DEFAULT_MODEL_RESOURCE, PACKAGE_IGNORE } from '../../forge.config'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../../test/models'
import { defaultModelPath } from './default-model'

describe('the embedded default model', () => {
  let cleanup = async () => {}
  afterEach(() => cleanup())

  it("comes from the repository's resources/models under Node", () => {
    expect(defaultModelPath(undefined)).toBe(STORIES_260K)
  })

  it(
    "comes from a packaged app's resources folder when the model was shipped there, else from the " + 'repository',
    async () => {
      const scratch = await scratchDir('neuron-resources-')
      cleanup = scratch.cleanup
      expect(defaultModelPath(scratch.dir)).toBe(STORIES_260K)
      await writeFile(join(scratch.dir, basename(STORIES_260K)), 'GGUF')
      expect(defaultModelPath(scratch.dir)).toBe(join(scratch.dir, basename(STORIES_260K)))
    },
  )

  it(
    'is the file Forge and electron-builder ship into the resources folder with its licence, once (not also ' +
      'inside app.asar)',
    () => {
      expect(DEFAULT_MODEL_RESOURCE).toBe(STORIES_260K)
      expect(DEFAULT_MODEL_LICENSE).toBe(join(REPO_ROOT, 'resources/models/LICENSE-stories260K'))
      expect(readFileSync(DEFAULT_MODEL_LICENSE, 'utf8')).toMatch(/MIT License\n\nCopyright \(c\) 2023 Andrej\n/)
      expect(config.packagerConfig?.extraResource).toEqual([STORIES_260K, DEFAULT_MODEL_LICENSE])
      expect(PACKAGE_IGNORE.some((re) => re.test('/resources/models/stories260K.gguf'))).toBe(true)
      expect(PACKAGE_IGNORE.some((re) => re.test('/resources/icon.png'))).toBe(false)
      expect(builder.extraResources).toEqual([
        { from: 'resources/models/stories260K.gguf', to: basename(STORIES_260K) },
        { from: 'resources/models/LICENSE-stories260K', to: 'LICENSE-stories260K' },
      ])
      expect(builder.files).toContain('!resources/models/**')
    },
  )
})
