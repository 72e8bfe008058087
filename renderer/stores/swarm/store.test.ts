import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { createSwarmStore } from './store'

describe('swarm store', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('refreshes every 3 s while the screen polls and stops when it is left', async () => {
    const bridge = fakeBridge({
      'swarm.get': () => ({
        trackerUrl: 'http://127.0.0.1:7070',
        hosts: [],
        models: [],
        thisHostId: 'a'.repeat(20),
        paired: [],
      }),
    })
    const store = createSwarmStore(bridge)
    const stop = store.getState().poll(3_000)
    await vi.advanceTimersByTimeAsync(6_000)
    expect(bridge.calls).toHaveLength(3)
    expect(store.getState().view?.trackerUrl).toBe('http://127.0.0.1:7070')
    stop()
    await vi.advanceTimersByTimeAsync(9_000)
    expect(bridge.calls).toHaveLength(3)
  })
})
