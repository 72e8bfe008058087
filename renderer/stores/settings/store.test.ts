import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { someSettings } from '../../../test/renderer/settings-fixtures'
import { limitsToForm } from './limitsForm'
import { savedMessage } from './selectors'
import { createSettingsStore } from './store'

const loaded = async (handlers: Parameters<typeof fakeBridge>[0] = {}) => {
  const bridge = fakeBridge({ 'settings.get': () => someSettings, ...handlers })
  const store = createSettingsStore(bridge, () => 42)
  await store.getState().load()
  return { bridge, store }
}

describe('settings store', () => {
  it('rejects invalid limits without calling the backend or changing the settings', async () => {
    const { bridge, store } = await loaded()
    await store.getState().saveLimits({ ...limitsToForm(someSettings.limits), diskGb: 'abc' })
    expect(store.getState().limitFieldErrors.diskGb).toContain('Disk: a number of GB, like 20')
    expect(store.getState().limitsError).toBeNull()
    expect(bridge.calls.map((c) => c.method)).toEqual(['settings.get'])
    expect(store.getState().settings).toEqual(someSettings)
  })

  it("shows the backend's refusal of a memory limit under the hosted range's need at the memory field", async () => {
    const { store } = await loaded({
      'settings.update': () => {
        throw new NeuronError('memory_limit', 'blocks [2, 5) of stories260k being hosted need about 6.4 MB')
      },
    })
    await store.getState().saveLimits({ ...limitsToForm(someSettings.limits), memoryGb: '2' })
    expect(store.getState().limitFieldErrors.memoryGb).toContain('need about 6.4 MB')
    expect(store.getState().limitsError).toBeNull()
    // A valid save clears the field's error.
    await store.getState().saveLimits({ ...limitsToForm(someSettings.limits) })
    expect(store.getState().limitFieldErrors).toEqual({})
  })

  it('saves only the changed limit, in bytes, and confirms', async () => {
    const { bridge, store } = await loaded({
      'settings.update': () => ({ ...someSettings, limits: { ...someSettings.limits, memoryBytes: 12e9 } }),
    })
    await store.getState().saveLimits({ ...limitsToForm(someSettings.limits), memoryGb: '12' })
    // threads may be a one-run --threads override: left out, the saved value stays.
    expect(bridge.calls.at(-1)).toEqual({ method: 'settings.update', input: { limits: { memoryBytes: 12e9 } } })
    expect(store.getState().settings?.limits.memoryBytes).toBe(12e9)
    expect(store.getState().savedAt).toBe(42)
    expect(savedMessage(store.getState().savedSection)).toBe('Limits saved')
  })

  it('saving an untouched form changes nothing, even a limit of a few odd bytes', async () => {
    const settings = {
      ...someSettings,
      limits: { diskBytes: 4_321_987, memoryBytes: 8_589_934_592, threads: 3, useGpu: false },
    }
    const { bridge, store } = await loaded({ 'settings.get': () => settings })
    await store.getState().saveLimits(limitsToForm(settings.limits))
    expect(store.getState().limitsError).toBeNull()
    expect(bridge.calls.map((c) => c.method)).toEqual(['settings.get'])
    expect(store.getState().settings).toEqual(settings)
    expect(store.getState().savedAt).toBe(42)
  })

  it("shows the backend's tracker_unreachable next to the tracker field and keeps the previous settings", async () => {
    const { store } = await loaded({
      'settings.update': () => {
        throw new NeuronError('tracker_unreachable', 'http://10.0.0.9:7070 did not answer within 5 s')
      },
    })
    await store.getState().saveTracker('http://10.0.0.9:7070')
    expect(store.getState().trackerError?.code).toBe('tracker_unreachable')
    expect(store.getState().settings?.trackerUrl).toBeNull()
    expect(store.getState().savedAt).toBeNull()
  })

  it('sends an empty tracker URL as the embedded swarm (null)', async () => {
    const { bridge, store } = await loaded({ 'settings.update': () => someSettings })
    await store.getState().saveTracker('   ')
    expect(bridge.calls.at(-1)).toEqual({ method: 'settings.update', input: { trackerUrl: null } })
  })

  it('checks a tracker URL, its form here and that a tracker answers in the backend, changing nothing', async () => {
    const { bridge, store } = await loaded({
      'settings.checkTracker': ({ trackerUrl }) => {
        if (trackerUrl.includes(':9'))
          throw new NeuronError('tracker_unreachable', `no Neuron tracker answers at ${trackerUrl}`)
        return { trackerUrl }
      },
    })
    expect(await store.getState().checkTracker('not a url')).toBe(false)
    expect(store.getState().trackerError?.message).toContain('full http(s) URL')
    expect(bridge.calls).toHaveLength(1)
    expect(await store.getState().checkTracker('http://127.0.0.1:9')).toBe(false)
    expect(store.getState().trackerError?.detail).toContain('no Neuron tracker answers at http://127.0.0.1:9')
    expect(await store.getState().checkTracker('http://127.0.0.1:7070')).toBe(true)
    expect(store.getState().trackerError).toBeNull()
    expect(await store.getState().checkTracker('')).toBe(true)
    expect(bridge.calls.map((c) => c.method)).toEqual([
      'settings.get',
      'settings.checkTracker',
      'settings.checkTracker',
    ])
  })

  it('shows settings changed elsewhere (the API tab, a pairing) as the backend pushes them', async () => {
    const { bridge, store } = await loaded()
    bridge.emit('settings.changed', { ...someSettings, lanOpen: true, trackerUrl: 'http://10.77.0.1:7070' })
    expect(store.getState().settings).toMatchObject({ lanOpen: true, trackerUrl: 'http://10.77.0.1:7070' })
    // Not a save of this screen's: no "Saved" note.
    expect(store.getState().savedAt).toBeNull()
  })

  it('refuses to import text that is not a PEM', async () => {
    const { bridge, store } = await loaded()
    await store.getState().importIdentity('my secret')
    expect(store.getState().identityError?.message).toContain('Paste a PEM private key')
    expect(bridge.calls).toHaveLength(1)
  })

  it(
    'sends the allow-list as keys, comments dropped, and an empty list as open (null); a bad line never reaches ' +
      'the backend',
    async () => {
      const { bridge, store } = await loaded({ 'settings.update': () => someSettings })
      const key = 'B'.repeat(43)
      await store.getState().saveAllowedKeys(`# friends\n${key}  # ada\nnot-a-key\n`)
      expect(store.getState().accessError?.message).toMatch(/line 3: "not-a-key" is not a public key/)
      expect(bridge.calls).toHaveLength(1)
      await store.getState().saveAllowedKeys(`# friends\n${key}  # ada\n`)
      expect(bridge.calls.at(-1)).toEqual({ method: 'settings.update', input: { allowedKeys: [key] } })
      expect(store.getState().accessError).toBeNull()
      await store.getState().saveAllowedKeys('  \n')
      expect(bridge.calls.at(-1)).toEqual({ method: 'settings.update', input: { allowedKeys: null } })
    },
  )
})
