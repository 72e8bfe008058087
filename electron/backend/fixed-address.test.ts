import { mkdir, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { scratchDir } from '../../test/models'
import { AppBackend } from './backend'
import { serveAtSavedAddress, UI_KEY_FILE } from './fixed-address'
import type { AppUiServer } from './ui-server'

let dir = ''
let staticDir = ''
let cleanup: () => Promise<void> = async () => {}
const logged: string[] = []

/** The backend and its UI as `neuron app --headless` starts them, on one data dir. */
async function startApp(): Promise<{ backend: AppBackend; ui: AppUiServer; stop: () => Promise<void> }> {
  const log = (l: string) => logged.push(l)
  const backend = await AppBackend.start({
    dataDir: join(dir, 'app'),
    trackerUrl: null,
    defaultModels: [],
    threads: 1,
    mdns: false,
    log,
  })
  const ui = await serveAtSavedAddress(backend, { staticDir, log })
  return {
    backend,
    ui,
    async stop() {
      await ui.close()
      await backend.close()
    },
  }
}

/** Opens the API socket as a tab that was given the key before; resolves true once admitted. */
function admitted(ui: AppUiServer, key: string): Promise<boolean> {
  const { port } = new URL(ui.url)
  const ws = new WebSocket(`${ui.url.replace('http', 'ws')}/api`, {
    origin: ui.url,
    headers: { cookie: `neuron-key-${port}=${key}` },
  })
  return new Promise((resolve) => {
    ws.once('open', () => {
      ws.close()
      resolve(true)
    })
    ws.once('error', () => resolve(false))
  })
}

function listen(port: number): Promise<Server> {
  const server = createServer()
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve(server))
  })
}

describe('the app’s address across restarts', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-address-'))
    staticDir = join(dir, 'renderer')
    await mkdir(staticDir, { recursive: true })
    await writeFile(join(staticDir, 'index.html'), '<!doctype html><title>Neuron</title>')
  })
  afterAll(async () => {
    await cleanup()
  })

  it(
    'keeps the UI’s port, its key and the embedded tracker’s port, so an open tab is admitted again after a ' +
      'restart',
    async () => {
      const first = await startApp()
      const before = { ui: first.ui.url, key: first.ui.key, tracker: first.backend.trackerUrl }
      expect(await admitted(first.ui, before.key)).toBe(true)
      await first.stop()
      const second = await startApp()
      try {
        expect({ ui: second.ui.url, key: second.ui.key, tracker: second.backend.trackerUrl }).toEqual(before)
        expect(await admitted(second.ui, before.key)).toBe(true)
        // Only its owner may read the key.
        if (process.platform !== 'win32') expect((await stat(join(dir, 'app', UI_KEY_FILE))).mode & 0o777).toBe(0o600)
      } finally {
        await second.stop()
      }
    },
  )

  it('starts on other ports when the saved ones are taken, says so, and keeps the new ones', async () => {
    const first = await startApp()
    const ports = { ui: Number(new URL(first.ui.url).port), tracker: Number(new URL(first.backend.trackerUrl).port) }
    const key = first.ui.key
    await first.stop()
    const squatters = [await listen(ports.ui), await listen(ports.tracker)]
    let moved: { ui: string; tracker: string }
    try {
      const second = await startApp()
      moved = { ui: second.ui.url, tracker: second.backend.trackerUrl }
      await second.stop()
      expect(moved.ui).not.toBe(`http://127.0.0.1:${ports.ui}`)
      expect(moved.tracker).not.toBe(`http://127.0.0.1:${ports.tracker}`)
      expect(logged.join('\n')).toContain(`the UI's saved port ${ports.ui} is taken`)
      expect(logged.join('\n')).toContain(`the embedded tracker's saved port ${ports.tracker} is taken`)
    } finally {
      for (const s of squatters) await new Promise<void>((r) => s.close(() => r()))
    }
    const third = await startApp()
    try {
      expect({ ui: third.ui.url, tracker: third.backend.trackerUrl }).toEqual(moved)
      expect(third.ui.key).toBe(key)
    } finally {
      await third.stop()
    }
  })
})
