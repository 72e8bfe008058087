import { createStore } from 'zustand/vanilla'
import type { HostingStatus, NeuronBridge } from '../../../protocol/app'
import type { BlockRange } from '../../../protocol/blocks'
import { shownError } from '../../api/errorText'
import { type HostingState, initialHostingState } from './initialState'
import { showsPicker } from './selectors'

export interface HostingActions {
  /** The tracker's models; a selection it does not list (picked before a switch of tracker) is dropped. */
  loadModels(): Promise<void>
  /** Packs and publishes a GGUF; on success the new model is listed and selected. */
  addModel(path: string): Promise<void>
  /** The path was edited: its old error no longer applies. */
  clearAddError(): void
  /** The OS file dialog (Electron); the chosen path, or null when cancelled or refused (then addError says why). */
  pickModelFile(): Promise<string | null>
  selectModel(modelId: string): Promise<void>
  /** Asks again for the selected model's preview (what it was computed under changed); nothing without a selection. */
  refreshPreview(): Promise<void>
  chooseBlocks(blocks: BlockRange): void
  start(): Promise<void>
  pause(): Promise<void>
  resume(): Promise<void>
  stop(): Promise<void>
  loadStatus(): Promise<void>
  /** Follows the backend's hosting.status pushes; returns the unsubscribe. */
  subscribe(): () => void
}
export type HostingStore = HostingState & HostingActions

export function createHostingStore(bridge: NeuronBridge) {
  return createStore<HostingStore>()((set, get) => {
    // hosting.status pushes received. The backend pushes every change (throttled ones a moment later),
    // so once a push arrives while a call is in flight the pushes alone end on the newest status. The
    // call's reply may be older than that push and must not overwrite it: pushes come only on changes,
    // so a stale phase would stay on screen.
    let pushes = 0
    /** The call's status to set, or nothing when a push arrived while the call was in flight. */
    const unlessPushed = async (run: () => Promise<HostingStatus>): Promise<{ status?: HostingStatus }> => {
      const before = pushes
      const status = await run()
      return pushes === before ? { status } : {}
    }
    const act = async (run: () => Promise<HostingStatus>) => {
      set({ acting: true, actionError: null })
      try {
        set({ ...(await unlessPushed(run)), acting: false })
      } catch (error) {
        set({ actionError: shownError(error), acting: false })
      }
    }
    return {
      ...initialHostingState,
      async loadModels() {
        try {
          const { models } = await bridge.call('models.list', {})
          set({ models, modelsError: null })
          // A model picked on another tracker (before a switch) is not this one's to preview.
          const { selectedModelId } = get()
          if (selectedModelId !== null && !models.some((m) => m.modelId === selectedModelId)) {
            set({ selectedModelId: null, preview: null, previewError: null, previewLoading: false, chosenBlocks: null })
          }
        } catch (error) {
          set({ modelsError: shownError(error) })
        }
      },
      clearAddError() {
        if (get().addError !== null) set({ addError: null })
      },
      async pickModelFile() {
        set({ addError: null })
        try {
          return (await bridge.call('models.pick', {})).path
        } catch (error) {
          set({ addError: shownError(error) })
          return null
        }
      },
      async addModel(path) {
        const trimmed = path.trim()
        if (trimmed === '')
          return set({ addError: { code: 'bad_request', message: 'Give the path of a .gguf file on this computer.' } })
        set({ adding: true, addError: null })
        try {
          const { modelId } = await bridge.call('models.add', { path: trimmed })
          set({ adding: false })
          await get().loadModels()
          await get().selectModel(modelId)
        } catch (error) {
          set({ adding: false, addError: shownError(error) })
        }
      },
      async selectModel(modelId) {
        set({ selectedModelId: modelId, preview: null, previewError: null, previewLoading: true, chosenBlocks: null })
        try {
          const preview = await bridge.call('hosting.preview', { modelId })
          if (get().selectedModelId !== modelId) return
          set({ preview, previewLoading: false, chosenBlocks: preview.placement.proposal?.blocks ?? null })
        } catch (error) {
          if (get().selectedModelId === modelId) set({ previewError: shownError(error), previewLoading: false })
        }
      },
      async refreshPreview() {
        const { selectedModelId } = get()
        if (selectedModelId !== null) await get().selectModel(selectedModelId)
      },
      chooseBlocks(blocks) {
        set({ chosenBlocks: blocks })
      },
      async start() {
        const { selectedModelId, chosenBlocks } = get()
        if (selectedModelId === null || chosenBlocks === null) return
        await act(() =>
          bridge.call('hosting.start', { modelId: selectedModelId, blocks: [chosenBlocks[0], chosenBlocks[1]] }),
        )
      },
      pause: () => act(() => bridge.call('hosting.pause', {})),
      resume: () => act(() => bridge.call('hosting.resume', {})),
      stop: () => act(() => bridge.call('hosting.stop', {})),
      async loadStatus() {
        try {
          set(await unlessPushed(() => bridge.call('hosting.status', {})))
        } catch (error) {
          set({ actionError: shownError(error) })
        }
      },
      subscribe() {
        return bridge.on('hosting.status', (status) => {
          pushes++
          const before = get().status?.phase
          set({ status })
          // This computer's blocks joined or left the swarm: the model list's coverage counted them or not.
          if (before !== status.phase && (status.phase === 'serving' || showsPicker(status))) void get().loadModels()
        })
      },
    }
  })
}
