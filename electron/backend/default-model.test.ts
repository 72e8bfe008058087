import { writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import config, { DEFAULT_MODEL_RESOURCE } from '../../forge.config'
import { HAVE_STORIES, STORIES_260K, scratchDir } from '../../test/models'
import { defaultModelPath } from './default-model'

describe('the embedded default model', () => {
  let cleanup = async () => {}
  afterEach(() => cleanup())

  it('comes from a checkout from beside the repository, under Node', () => {
    expect(defaultModelPath(undefined)).toBe(STORIES_260K)
  })

  it("comes from a packaged app's resources folder when the model was shipped there, else from beside the repository", async () => {
    const scratch = await scratchDir('neuron-resources-')
    cleanup = scratch.cleanup
    expect(defaultModelPath(scratch.dir)).toBe(STORIES_260K)
    await writeFile(join(scratch.dir, basename(STORIES_260K)), 'GGUF')
    expect(defaultModelPath(scratch.dir)).toBe(join(scratch.dir, basename(STORIES_260K)))
  })

  it('is the file Forge ships into the resources folder, when the checkout has it', () => {
    expect(DEFAULT_MODEL_RESOURCE).toBe(STORIES_260K)
    const shipped = config.packagerConfig?.extraResource
    expect(shipped).toEqual(HAVE_STORIES ? [STORIES_260K] : [])
  })
})
