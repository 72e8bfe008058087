import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { scratchDir } from '../../test/models'
import { DEFAULT_HUB_ENDPOINT, hubConfigFromEnv } from './hub-config'

describe('HF_ENDPOINT and HF_TOKEN, read as huggingface_hub reads them', () => {
  it('defaults to huggingface.co with no token when nothing is set and no token file exists', async () => {
    const { dir, cleanup } = await scratchDir('neuron-hf-env-')
    expect(await hubConfigFromEnv({ HF_HOME: dir })).toEqual({ endpoint: DEFAULT_HUB_ENDPOINT })
    await cleanup()
  })

  it('takes a mirror from HF_ENDPOINT (no trailing slash), HF_TOKEN before the older name and the file', async () => {
    const { dir, cleanup } = await scratchDir('neuron-hf-env-')
    await writeFile(join(dir, 'token'), 'hf_from_file\n')
    const env = { HF_HOME: dir, HF_ENDPOINT: 'https://hf-mirror.example/', HUGGING_FACE_HUB_TOKEN: 'hf_old' }
    expect(await hubConfigFromEnv({ ...env, HF_TOKEN: 'hf_new' })).toEqual({
      endpoint: 'https://hf-mirror.example',
      token: 'hf_new',
    })
    expect((await hubConfigFromEnv(env)).token).toBe('hf_old')
    expect((await hubConfigFromEnv({ HF_HOME: dir })).token).toBe('hf_from_file')
    await mkdir(join(dir, 'elsewhere'))
    await writeFile(join(dir, 'elsewhere', 't'), 'hf_path')
    expect((await hubConfigFromEnv({ HF_HOME: dir, HF_TOKEN_PATH: join(dir, 'elsewhere', 't') })).token).toBe('hf_path')
    await cleanup()
  })

  it('refuses an HF_ENDPOINT that is not a plain http(s) address, saying what one looks like', async () => {
    for (const bad of [
      'hf-mirror.com',
      'ftp://mirror.example',
      'https://user:pw@mirror.example',
      'https://m.example/?a=1',
    ]) {
      await expect(hubConfigFromEnv({ HF_ENDPOINT: bad }), bad).rejects.toThrow(/HF_ENDPOINT/)
    }
  })
})
