import { describe, expect, it } from 'vitest'
import { desktopView } from '../../test/renderer/computer-fixtures'
import { fakeBridge } from '../../test/renderer/fake-bridge'
import { serving, tinyModel, tinyPreview } from '../../test/renderer/hosting-fixtures'
import { someSettings } from '../../test/renderer/settings-fixtures'
import { createComputerStore } from './computer/store'
import { createHostingStore } from './hosting/store'
import { refreshOnChanges } from './refresh'
import { createSettingsStore } from './settings/store'

const settle = () => new Promise((resolve) => setTimeout(resolve, 0))

function setup() {
  /** What the tracker in force lists: a switch of tracker may change it. */
  const listed = { models: [tinyModel] }
  const bridge = fakeBridge({
    'models.list': () => ({ models: listed.models }),
    'hosting.preview': () => tinyPreview,
    'hosting.stop': () => ({ ...serving, phase: 'idle' }),
    'computer.get': () => desktopView,
    'settings.get': () => someSettings,
    'settings.update': () => ({ ...someSettings, limits: { ...someSettings.limits, memoryBytes: 1_000_000_000 } }),
  })
  const stores = {
    settings: createSettingsStore(bridge),
    hosting: createHostingStore(bridge),
    computer: createComputerStore(bridge),
  }
  refreshOnChanges(stores)
  const asked = (method: string) => bridge.calls.filter((c) => c.method === method).length
  return { bridge, stores, asked, listed }
}

describe('refreshing what a change made stale', () => {
  it('asks again for the preview and the computer view once a setting is saved', async () => {
    const { stores, asked } = setup()
    await stores.settings.getState().load()
    await stores.computer.getState().load()
    await stores.hosting.getState().selectModel(tinyModel.modelId)
    expect([asked('hosting.preview'), asked('computer.get')]).toEqual([1, 1])
    await stores.settings.getState().saveLimits({
      diskGb: '20',
      memoryGb: '1',
      threads: String(someSettings.limits.threads),
      useGpu: someSettings.limits.useGpu,
    })
    await settle()
    expect([asked('hosting.preview'), asked('computer.get')]).toEqual([2, 2])
  })

  it('asks again for the preview once hosting stops and the picker is back', async () => {
    const { bridge, stores, asked } = setup()
    stores.hosting.getState().subscribe()
    await stores.hosting.getState().selectModel(tinyModel.modelId)
    bridge.emit('hosting.status', serving)
    expect(asked('hosting.preview')).toBe(1)
    await stores.hosting.getState().stop()
    await settle()
    expect(asked('hosting.preview')).toBe(2)
    expect(stores.hosting.getState().preview).toEqual(tinyPreview)
  })

  it(
    'drops a model picked on the tracker before a switch when the new one does not list it, and previews nothing ' +
      'for it',
    async () => {
      const { stores, asked, listed } = setup()
      await stores.settings.getState().load()
      await stores.hosting.getState().selectModel(tinyModel.modelId)
      listed.models = []
      await stores.settings.getState().saveTracker('http://127.0.0.1:9')
      await settle()
      expect(stores.hosting.getState()).toMatchObject({
        models: [],
        selectedModelId: null,
        preview: null,
        previewError: null,
        previewLoading: false,
      })
      expect(asked('hosting.preview')).toBe(1)
    },
  )
})
