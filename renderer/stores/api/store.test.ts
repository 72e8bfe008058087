import { describe, expect, it } from 'vitest'
import type { ApiAccessView } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { someSettings } from '../../../test/renderer/settings-fixtures'
import { createApiAccessStore } from './store'

const none: ApiAccessView = {
  endpoint: 'http://127.0.0.1:7070/v1',
  lanOpen: false,
  embedded: true,
  modelIds: ['stories260k'],
  key: null,
}
const made: ApiAccessView = { ...none, key: { masked: 'nk-Ab…wxyz', createdAt: 1 } }

describe('API access store', () => {
  it('holds a new key in full until the screen forgets it, then only its masked form', async () => {
    const store = createApiAccessStore(
      fakeBridge({ 'api.get': () => none, 'api.createKey': () => ({ apiKey: 'nk-Abcdwxyz', view: made }) }),
    )
    await store.getState().load()
    expect(store.getState().view?.key).toBeNull()
    await store.getState().createKey()
    expect(store.getState()).toMatchObject({ freshKey: 'nk-Abcdwxyz', busy: false, view: made })
    store.getState().forgetKey()
    expect(store.getState()).toMatchObject({ freshKey: null, view: made })
  })

  it('drops the full key on revoke, and says why making one failed', async () => {
    const store = createApiAccessStore(
      fakeBridge({
        'api.createKey': () => ({ apiKey: 'nk-Abcdwxyz', view: made }),
        'api.revokeKey': () => none,
      }),
    )
    await store.getState().createKey()
    store.getState().revokeKey()
    await store.getState().confirm()
    expect(store.getState()).toMatchObject({ freshKey: null, view: none, error: null, confirming: null })

    const remote = createApiAccessStore(
      fakeBridge({
        'api.createKey': () => {
          throw new NeuronError('not_available', 'the app cannot make a key on a remote tracker')
        },
      }),
    )
    await remote.getState().createKey()
    expect(remote.getState()).toMatchObject({ freshKey: null, busy: false, error: { code: 'not_available' } })
  })

  it('asks before revoking or replacing the key in use; Cancel revokes nothing and the key stays', async () => {
    const bridge = fakeBridge({
      'api.get': () => made,
      'api.revokeKey': () => none,
      'api.createKey': () => ({ apiKey: 'nk-Newkwxyz', view: made }),
    })
    const store = createApiAccessStore(bridge)
    await store.getState().load()
    store.getState().revokeKey()
    expect(store.getState().confirming).toBe('revoke')
    store.getState().cancel()
    await store.getState().createKey()
    expect(store.getState().confirming).toBe('replace')
    store.getState().cancel()
    expect(store.getState()).toMatchObject({ confirming: null, view: made, freshKey: null })
    expect(bridge.calls.map((c) => c.method)).toEqual(['api.get'])

    await store.getState().createKey()
    await store.getState().confirm()
    expect(store.getState()).toMatchObject({ confirming: null, freshKey: 'nk-Newkwxyz' })
    expect(bridge.calls.map((c) => c.method)).toEqual(['api.get', 'api.createKey'])
  })

  it(
    'turns the home-network switch through settings and ' + 'shows the endpoint it gives; loads the request log',
    async () => {
      const row = {
        startedAt: 1,
        endpoint: 'chat.completions',
        modelId: 'stories260k',
        promptTokens: 5,
        completionTokens: 6,
        chargedMicro: 42,
        status: 'completed',
      }
      const bridge = fakeBridge({
        'settings.update': () => ({ ...someSettings, lanOpen: true }),
        'api.get': () => ({ ...none, lanOpen: true, endpoint: 'http://192.168.1.20:7070/v1' }),
        'api.requests': () => ({ requests: [row] }),
      })
      const store = createApiAccessStore(bridge)
      await store.getState().setLanOpen(true)
      expect(bridge.calls[0]).toEqual({ method: 'settings.update', input: { lanOpen: true } })
      expect(store.getState().view).toMatchObject({ lanOpen: true, endpoint: 'http://192.168.1.20:7070/v1' })
      await store.getState().loadRequests()
      expect(store.getState().requests).toEqual([row])
    },
  )
})
