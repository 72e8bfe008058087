import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../../protocol/errors'
import { desktopView } from '../../../test/renderer/computer-fixtures'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { createComputerStore } from './store'

describe('computer store', () => {
  it('asks the backend to measure again on refresh and shows the new numbers', async () => {
    const bridge = fakeBridge({ 'computer.get': () => desktopView })
    const store = createComputerStore(bridge)
    await store.getState().load(true)
    expect(bridge.calls).toEqual([{ method: 'computer.get', input: { refresh: true } }])
    expect(store.getState().view?.servableBytes).toBe(14.5e9)
  })

  it('shows the error and keeps the last numbers when the backend fails', async () => {
    let fail = false
    const bridge = fakeBridge({
      'computer.get': () => {
        if (fail) throw new NeuronError('internal', 'hardware probe crashed')
        return desktopView
      },
    })
    const store = createComputerStore(bridge)
    await store.getState().load()
    fail = true
    await store.getState().load(true)
    expect(store.getState().error?.message).toBe('hardware probe crashed')
    expect(store.getState().view).toEqual(desktopView)
  })
})
