// The desktop app end to end: Electron starts main (electron/main/index.js), the sandboxed preload
// exposes window.neuron, the React renderer drives the real backend until this computer serves
// stories260K. Needs `npm run build` (dist/renderer, dist/electron/preload.cjs) and Electron's binary.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { _electron, type ElectronApplication } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { electronBinary } from '../electron/binary'

const root = resolve(import.meta.dirname, '..')
const screenshots = join(root, 'test-results', 'screenshots')

/** The Electron executable `npm install` downloaded (the same lookup `neuron app` makes), or null. */
const found = electronBinary()
const binary = 'path' in found ? found.path : null
const reason = binary ? '' : ' (skipped: Electron binary not installed — its download from GitHub is blocked here)'
// The reporter lists a skipped file without its tests' names: say why here too.
if (!('path' in found)) console.warn(`e2e/electron.e2e.test.ts skipped: ${found.missing}`)

describe('Electron app', () => {
  it.skipIf(!binary)(
    `hosts stories260K from the desktop app until it serves${reason}`,
    async () => {
      for (const built of ['dist/renderer/index.html', 'dist/electron/preload.cjs']) {
        if (!existsSync(join(root, built)))
          throw new Error(`${built} is missing; run \`npm run build\` before the Electron e2e`)
      }
      mkdirSync(screenshots, { recursive: true })
      const dataDir = mkdtempSync(join(tmpdir(), 'neuron-electron-e2e-'))
      let app: ElectronApplication | null = null
      try {
        app = await _electron.launch({
          executablePath: binary ?? undefined,
          args: ['.', `--data-dir=${dataDir}`],
          cwd: root,
          env: { ...process.env, NEURON_DATA_DIR: dataDir },
          timeout: 90_000,
        })
        const win = await app.firstWindow()
        await win.getByTestId('app-ready').waitFor({ timeout: 90_000 })
        await win.screenshot({ path: join(screenshots, 'electron-ready.png') })

        // The page sees the bridge and nothing of Node, and a failed call keeps its code across contextBridge.
        const page = await win.evaluate(async () => {
          const w = globalThis as unknown as {
            neuron: { call(m: string, i: unknown): Promise<unknown> }
            require?: unknown
            process?: unknown
          }
          const failure = (await w.neuron
            .call('hosting.start', { modelId: 'Not A Model', blocks: [0, 1] })
            .catch((e: unknown) => e)) as { code?: unknown }
          return {
            keys: Object.keys(w.neuron).sort(),
            require: typeof w.require,
            process: typeof w.process,
            code: failure.code,
          }
        })
        expect(page).toEqual({ keys: ['call', 'on'], require: 'undefined', process: 'undefined', code: 'bad_request' })

        await win.getByTestId('nav-host').click()
        await win.getByTestId('model-option-stories260k').click()
        await win.screenshot({ path: join(screenshots, 'electron-host-model.png') })
        await win.getByTestId('hosting-confirm').click()
        await win.locator('[data-testid="hosting-phase"][data-phase="serving"]').waitFor({ timeout: 240_000 })
        await win.screenshot({ path: join(screenshots, 'electron-serving.png') })
      } finally {
        await app?.close()
        rmSync(dataDir, { recursive: true, force: true })
      }
    },
    420_000,
  )
})
