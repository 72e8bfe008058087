import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runInNewContext } from 'node:vm'
import { build } from 'vite'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { describeExposedBridge } from '../../test/exposed-bridge'
import { REPO_ROOT, scratchDir } from '../../test/models'
import * as electron from '../__mocks__/electron'

vi.mock('electron', () => import('../__mocks__/electron'))

describe('preload (electron mocked: no Electron binary on this machine)', () => {
  describeExposedBridge('electron/preload/preload.ts', async () => {
    electron.resetElectronMock()
    await import('./preload')
  })

  // The bundle is what a sandboxed renderer runs: evaluated in a fresh V8 context whose `require`
  // knows only `electron`, with no process, Buffer or Node globals, it must still work.
  let outDir = ''
  let cleanup: () => Promise<void> = async () => {}
  const required: string[] = []
  beforeAll(async () => {
    ;({ dir: outDir, cleanup } = await scratchDir('neuron-preload-'))
    await build({
      configFile: join(REPO_ROOT, 'vite.preload.config.ts'),
      root: REPO_ROOT,
      logLevel: 'silent',
      build: { outDir, emptyOutDir: true },
    })
  })
  afterAll(() => cleanup())

  describeExposedBridge('the built preload.cjs (vite.preload.config.ts) in node:vm, requiring only electron', () => {
    electron.resetElectronMock()
    const code = readFileSync(join(outDir, 'preload.cjs'), 'utf8')
    const run = runInNewContext(
      `(function (require, module, exports) {\n${code}\n})`,
      { console },
      { filename: 'preload.cjs' },
    ) as (require: (id: string) => unknown, module: { exports: unknown }, exports: unknown) => void
    const module = { exports: {} }
    run(
      (id) => {
        required.push(id)
        if (id === 'electron') return electron
        throw new Error(`a sandboxed preload cannot require ${id}`)
      },
      module,
      module.exports,
    )
  })

  it('the built bundle requires electron and nothing else', () => {
    expect(required).toEqual(['electron'])
  })
})
