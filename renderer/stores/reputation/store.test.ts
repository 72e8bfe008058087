import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { bannedChecks, reputationWith } from '../../../test/renderer/reputation-fixtures'
import { createReputationStore } from './store'

describe('reputation store', () => {
  it('explains an unreachable tracker instead of showing an empty score', async () => {
    const bridge = fakeBridge({
      'reputation.get': () => {
        throw new NeuronError('tracker_unreachable', 'http://10.0.0.9:7070 did not answer')
      },
    })
    const store = createReputationStore(bridge)
    await store.getState().load()
    expect(store.getState().view).toBeNull()
    expect(store.getState().error).toEqual({
      code: 'tracker_unreachable',
      message: expect.stringContaining('The tracker does not answer'),
      detail: 'http://10.0.0.9:7070 did not answer',
    })
  })

  it("keeps the tracker's checks with the score, and clears an earlier error", async () => {
    let fail = true
    const bridge = fakeBridge({
      'reputation.get': () => {
        if (fail) throw new NeuronError('tracker_unreachable', 'no answer')
        return reputationWith(bannedChecks)
      },
    })
    const store = createReputationStore(bridge)
    await store.getState().load()
    fail = false
    await store.getState().load()
    expect(store.getState().error).toBeNull()
    expect(store.getState().view?.checks?.ban?.reason).toBe(bannedChecks.ban?.reason)
  })
})
