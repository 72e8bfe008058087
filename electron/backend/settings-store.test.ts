import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readAppReply } from '../../protocol'
import { scratchDir } from '../../test/models'
import { AppBackend } from './backend'
import { SETTINGS_FILE, SettingsStore } from './settings-store'

let cleanup: () => Promise<void> = async () => {}
afterEach(() => cleanup())

async function scratch(): Promise<string> {
  const made = await scratchDir('neuron-settings-')
  cleanup = made.cleanup
  return made.dir
}

describe('the settings file', () => {
  it('is left whole and valid by two writers saving at once, with no temp file behind', async () => {
    const dir = await scratch()
    const [a, b] = await Promise.all([SettingsStore.open(dir), SettingsStore.open(dir)])
    const writes = Array.from({ length: 20 }, (_, i) => [
      a.update({ limits: { threads: i + 1 } }),
      b.update({ addedModels: [`/models/m${i}.gguf`] }),
    ]).flat()
    await Promise.all(writes)
    const text = await readFile(join(dir, SETTINGS_FILE), 'utf8')
    const last = [a.value, b.value].map((v) => `${JSON.stringify(v, null, 2)}\n`)
    expect(last).toContain(text)
    expect((await SettingsStore.open(dir)).notice).toBeNull()
    expect(await readdir(dir)).toEqual([SETTINGS_FILE])
  })

  it('keeps every change one writer makes at once: none overwrites another', async () => {
    const dir = await scratch()
    const store = await SettingsStore.open(dir)
    await Promise.all([
      store.update({ limits: { threads: 3 } }),
      store.update({ addedModels: ['/models/a.gguf'] }),
      store.update({ hosting: { modelId: 'stories260k', blocks: [0, 2], paused: true } }),
      store.update({ consentedTrackers: ['https://tracker.example.org'] }),
    ])
    expect((await SettingsStore.open(dir)).value).toMatchObject({
      limits: { threads: 3 },
      addedModels: ['/models/a.gguf'],
      hosting: { modelId: 'stories260k', blocks: [0, 2], paused: true },
      consentedTrackers: ['https://tracker.example.org'],
    })
  })

  it('keeps a corrupt file aside, starts the app with the defaults and says so in the settings', async () => {
    const dir = await scratch()
    const corrupt = '{"trackerUrl": "http://127.0.0.1:7070", "limits": {"threads": '
    await writeFile(join(dir, SETTINGS_FILE), corrupt)
    const lines: string[] = []
    const backend = await AppBackend.start({
      dataDir: dir,
      trackerUrl: null,
      defaultModels: [],
      threads: 1,
      log: (line) => lines.push(line),
    })
    try {
      const settings = readAppReply('settings.get', await backend.call('settings.get', {}))
      expect(settings.trackerUrl).toBeNull()
      const aside = (await readdir(dir)).filter((f) => f.startsWith(`${SETTINGS_FILE}.corrupt-`))
      expect(aside).toHaveLength(1)
      expect(await readFile(join(dir, aside[0] ?? ''), 'utf8')).toBe(corrupt)
      expect(settings.notice).toContain(`${join(dir, SETTINGS_FILE)} is not JSON (`)
      expect(settings.notice).toContain(
        `. It was kept as ${join(dir, aside[0] ?? '')} and the app started with the default settings`,
      )
      expect(lines).toContain(settings.notice)
      // The next save writes a fresh file; the kept one stays as it was.
      readAppReply('settings.update', await backend.call('settings.update', { limits: { threads: 2 } }))
      expect((await SettingsStore.open(dir)).value.limits).toEqual({ threads: 2 })
      expect(await readFile(join(dir, aside[0] ?? ''), 'utf8')).toBe(corrupt)
    } finally {
      await backend.close()
    }
  })

  it('keeps aside a file that is JSON but not settings, naming the field that is wrong', async () => {
    const dir = await scratch()
    await writeFile(join(dir, SETTINGS_FILE), JSON.stringify({ limits: { threads: -4 } }))
    const store = await SettingsStore.open(dir)
    expect(store.value.limits).toEqual({})
    expect(store.notice).toMatch(/limits\.threads.*kept as .*settings\.json\.corrupt-.* default settings/)
  })
})
