import { describe, expect, it } from 'vitest'
import type { HostingStatus } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { downloading, serving, tinyModel, tinyPreview } from '../../../test/renderer/hosting-fixtures'
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

  it('fills the path from the file dialog, and shows why when there is none', async () => {
    const picked = createHostingStore(fakeBridge({ 'models.pick': () => ({ path: '/models/llama.gguf' }) }))
    expect(await picked.getState().pickModelFile()).toBe('/models/llama.gguf')
    expect(picked.getState().addError).toBeNull()
    const browser = createHostingStore(
      fakeBridge({
        'models.pick': () => {
          throw new NeuronError('not_available', 'type the path of the .gguf file instead')
        },
      }),
    )
    expect(await browser.getState().pickModelFile()).toBeNull()
    expect(browser.getState().addError).toMatchObject({
      code: 'not_available',
      message: 'type the path of the .gguf file instead',
    })
    // Editing the path makes the old error go.
    browser.getState().clearAddError()
    expect(browser.getState().addError).toBeNull()
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

  it("keeps a status push that arrived while a call was in flight over the call's older reply", async () => {
    let answer: (status: HostingStatus) => void = () => {}
    const bridge = fakeBridge({ 'hosting.status': () => new Promise<HostingStatus>((resolve) => (answer = resolve)) })
    const store = createHostingStore(bridge)
    store.getState().subscribe()
    const loading = store.getState().loadStatus()
    bridge.emit('hosting.status', serving)
    answer(downloading)
    await loading
    // Pushes come only on changes: had the reply won, 'downloading' would stay on screen while serving.
    expect(store.getState().status?.phase).toBe('serving')
  })

  it("takes a call's reply when no push arrived while it was in flight", async () => {
    let answer: (status: HostingStatus) => void = () => {}
    const bridge = fakeBridge({
      'hosting.preview': () => tinyPreview,
      'hosting.start': () => new Promise<HostingStatus>((resolve) => (answer = resolve)),
      'hosting.pause': () => ({ ...serving, phase: 'paused', serving: null }),
    })
    const store = createHostingStore(bridge)
    store.getState().subscribe()
    await store.getState().selectModel('stories260k')
    bridge.emit('hosting.status', { ...downloading, phase: 'idle' })
    const starting = store.getState().start()
    answer(downloading)
    await starting
    expect(store.getState().status?.phase).toBe('downloading')
    bridge.emit('hosting.status', serving)
    await store.getState().pause()
    expect(store.getState().status?.phase).toBe('paused')
    expect(store.getState().acting).toBe(false)
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
    expect(store.getState().addError).toEqual({
      code: 'not_gguf',
      message: '/home/ada/notes.txt is not a GGUF file (no GGUF magic)',
    })
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

  it("asks again for the models' coverage once this computer's blocks join or leave the swarm", async () => {
    const bridge = fakeBridge({ 'models.list': () => ({ models: [tinyModel] }) })
    const store = createHostingStore(bridge)
    store.getState().subscribe()
    const listed = () => bridge.calls.filter((c) => c.method === 'models.list').length
    bridge.emit('hosting.status', downloading)
    expect(listed()).toBe(0)
    bridge.emit('hosting.status', serving)
    expect(listed()).toBe(1)
    bridge.emit('hosting.status', { ...serving, phase: 'stopping' })
    bridge.emit('hosting.status', { ...serving, phase: 'idle', modelId: null, blocks: null })
    expect(listed()).toBe(2)
  })
})
