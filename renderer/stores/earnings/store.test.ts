import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { someEarnings } from '../../../test/renderer/earnings-fixtures'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { createEarningsStore } from './store'

describe('earnings store', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('shows the new balance at once and reloads the tables once after a burst of receipts', async () => {
    const bridge = fakeBridge({ 'earnings.get': () => someEarnings })
    const store = createEarningsStore(bridge)
    await store.getState().load()
    store.getState().subscribe(500)
    const receipt = {
      hostId: someEarnings.hostId,
      ok: true,
      modelId: 'stories260k',
      earnedMicro: 10,
      balanceMicro: 4_260,
    }
    bridge.emit('earnings.receipt', receipt)
    bridge.emit('earnings.receipt', { ...receipt, balanceMicro: 4_270 })
    expect(store.getState().earnings?.balanceMicro).toBe(4_270)
    await vi.advanceTimersByTimeAsync(500)
    expect(bridge.calls.filter((c) => c.method === 'earnings.get')).toHaveLength(2)
  })

  it("never shows a receipt's own earnedMicro: the tables change only when earnings are reloaded", async () => {
    const bridge = fakeBridge({ 'earnings.get': () => someEarnings })
    const store = createEarningsStore(bridge)
    await store.getState().load()
    store.getState().subscribe(500)
    bridge.emit('earnings.receipt', {
      hostId: someEarnings.hostId,
      ok: true,
      modelId: 'stories260k',
      earnedMicro: 999_999,
      balanceMicro: 4_260,
    })
    expect(store.getState().earnings).toEqual({ ...someEarnings, balanceMicro: 4_260 })
  })

  it(
    'shows pending and settled earnings apart as receipts arrive: a receipt adds to pending, not to what is ' +
      'spendable',
    async () => {
      const bridge = fakeBridge({ 'earnings.get': () => someEarnings })
      const store = createEarningsStore(bridge)
      await store.getState().load()
      store.getState().subscribe(500)
      const receipt = { hostId: someEarnings.hostId, ok: true, modelId: 'stories260k', earnedMicro: 10 }
      bridge.emit('earnings.receipt', { ...receipt, balanceMicro: someEarnings.balanceMicro, pendingMicro: 1_510 })
      expect(store.getState().earnings).toMatchObject({ balanceMicro: 4_250, pendingMicro: 1_510 })
    },
  )
})
