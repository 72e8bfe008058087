import { describe, expect, it } from 'vitest'
import { AppApi, type SystemPromptPreset } from '../../../protocol/app'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { createChatStore } from './store'

/** A backend keeping presets by name, each save checked by the contract. */
function setup() {
  let kept: SystemPromptPreset[] = []
  const bridge = fakeBridge({
    'conversations.presets': () => ({ presets: kept }),
    'conversations.savePreset': (input) => {
      const { preset } = AppApi['conversations.savePreset'].request.parse(input)
      kept = [...kept.filter((p) => p.name !== preset.name), preset]
      return { presets: kept }
    },
    'conversations.deletePreset': ({ name }) => {
      kept = kept.filter((p) => p.name !== name)
      return { presets: kept }
    },
  })
  return { bridge, store: createChatStore(bridge) }
}

describe('chat store: system prompt presets', () => {
  it('saves a prompt under a name, replaces it by name, and deletes it', async () => {
    const { store } = setup()
    expect(await store.getState().loadPresets()).toBe(true)
    expect(store.getState().presets).toEqual([])
    await store.getState().savePreset(' Pirate ', 'Answer as a pirate.')
    await store.getState().savePreset('Pirate', 'Arr.')
    expect(store.getState().presets).toEqual([{ name: 'Pirate', prompt: 'Arr.' }])
    await store.getState().deletePreset('Pirate')
    expect(store.getState().presets).toEqual([])
  })

  it('asks for a name before saving, and says why the backend refused one', async () => {
    const { bridge, store } = setup()
    expect(await store.getState().savePreset('  ', 'x')).toBe(false)
    expect(store.getState().presetsError?.message).toMatch(/^Name the preset first/)
    expect(await store.getState().savePreset('Empty', ' ')).toBe(false)
    expect(store.getState().presetsError?.message).toMatch(/^Write the system prompt first/)
    expect(bridge.calls).toEqual([])
    expect(await store.getState().savePreset('x'.repeat(65), 'x')).toBe(false)
    expect(store.getState().presetsError?.message).toMatch(/up to 64 characters/)
    expect(await store.getState().savePreset('Short', 'x')).toBe(true)
    expect(store.getState().presetsError).toBeNull()
  })
})
