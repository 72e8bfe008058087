import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../fakeBridge'
import { downloading, serving, tinyModel, tinyPreview } from './fixtures'
import { createHostingStore } from './store'

describe('hosting store', () => {
  it('previews a picked model and starts hosting the proposed range', async () => {
    const bridge = fakeBridge({ 'hosting.preview': () => tinyPreview, 'hosting.start': () => downloading })
    const store = createHostingStore(bridge)
    await store.getState().selectModel('stories260k')
    expect(store.getState().chosenBlocks).toEqual([3, 6])
    await store.getState().start()
    expect(bridge.calls.at(-1)).toEqual({ method: 'hosting.start', input: { modelId: 'stories260k', blocks: [3, 6] } })
    expect(store.getState().status?.phase).toBe('downloading')
  })

  it('starts the alternative the user selected instead of the proposal', async () => {
    const bridge = fakeBridge({ 'hosting.preview': () => tinyPreview, 'hosting.start': () => downloading })
    const store = createHostingStore(bridge)
    await store.getState().selectModel('stories260k')
    store.getState().chooseBlocks([2, 4])
    await store.getState().start()
    expect(bridge.calls.at(-1)?.input).toEqual({ modelId: 'stories260k', blocks: [2, 4] })
  })

  it('follows hosting.status events from download to serving', () => {
    const bridge = fakeBridge()
    const store = createHostingStore(bridge)
    const unsubscribe = store.getState().subscribe()
    bridge.emit('hosting.status', downloading)
    expect(store.getState().status?.artifacts[0]?.downloadedBytes).toBe(300_000)
    bridge.emit('hosting.status', serving)
    expect(store.getState().status?.phase).toBe('serving')
    expect(store.getState().status?.serving?.activeSessions).toBe(1)
    unsubscribe()
    bridge.emit('hosting.status', downloading)
    expect(store.getState().status?.phase).toBe('serving')
  })

  it('shows a not_gguf error inline and changes nothing else', async () => {
    const bridge = fakeBridge({
      'models.list': () => ({ models: [tinyModel] }),
      'models.add': () => {
        throw new NeuronError('not_gguf', '/home/ada/notes.txt is not a GGUF file (no GGUF magic)')
      },
    })
    const store = createHostingStore(bridge)
    await store.getState().loadModels()
    await store.getState().addModel('/home/ada/notes.txt')
    expect(store.getState().addError).toEqual({ code: 'not_gguf', message: '/home/ada/notes.txt is not a GGUF file (no GGUF magic)' })
    expect(store.getState().models).toEqual([tinyModel])
    expect(store.getState().selectedModelId).toBeNull()
  })

  it('lists and selects a model once it is added', async () => {
    const bridge = fakeBridge({
      'models.add': () => ({ modelId: 'stories260k' }),
      'models.list': () => ({ models: [tinyModel] }),
      'hosting.preview': () => tinyPreview,
    })
    const store = createHostingStore(bridge)
    await store.getState().addModel('  /models/stories260K.gguf ')
    expect(bridge.calls[0]).toEqual({ method: 'models.add', input: { path: '/models/stories260K.gguf' } })
    expect(store.getState().models.map((m) => m.modelId)).toEqual(['stories260k'])
    expect(store.getState().selectedModelId).toBe('stories260k')
  })
})
