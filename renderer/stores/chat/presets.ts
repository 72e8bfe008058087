import type { NeuronBridge, SystemPromptPreset } from '../../../protocol/app'
import { type ShownError, shownError } from '../../api/errorText'

/** The chat's system prompts kept by name (the backend keeps them in the data dir, beside the conversations). */
export interface PresetState {
  presets: SystemPromptPreset[]
  /** Why the presets could not be loaded, saved or deleted; null when they were. */
  presetsError: ShownError | null
}

export interface PresetActions {
  loadPresets(): Promise<boolean>
  /** Keeps `prompt` under `name` (replacing one of that name); false, with presetsError, when not kept. */
  savePreset(name: string, prompt: string): Promise<boolean>
  deletePreset(name: string): Promise<boolean>
}

export const initialPresetState: PresetState = { presets: [], presetsError: null }

export function presetActions(bridge: NeuronBridge, set: (change: Partial<PresetState>) => void): PresetActions {
  const run = async (call: () => Promise<{ presets: SystemPromptPreset[] }>): Promise<boolean> => {
    try {
      set({ presets: (await call()).presets, presetsError: null })
      return true
    } catch (error) {
      set({ presetsError: shownError(error) })
      return false
    }
  }
  return {
    loadPresets: () => run(() => bridge.call('conversations.presets', {})),
    async savePreset(name, prompt) {
      const named = name.trim()
      if (named === '') {
        set({ presetsError: { code: 'no_name', message: 'Name the preset first, e.g. "Pirate" or "Tutor".' } })
        return false
      }
      if (prompt.trim() === '') {
        set({
          presetsError: { code: 'no_prompt', message: 'Write the system prompt first, then save it as a preset.' },
        })
        return false
      }
      return run(() => bridge.call('conversations.savePreset', { preset: { name: named, prompt } }))
    },
    deletePreset: (name) => run(() => bridge.call('conversations.deletePreset', { name })),
  }
}
