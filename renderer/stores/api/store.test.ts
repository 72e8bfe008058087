import { describe, expect, it } from 'vitest'
import type { ApiAccessView } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { createApiAccessStore } from './store'

const none: ApiAccessView = { endpoint: 'http://127.0.0.1:7070/v1', lanOpen: false, embedded: true, modelIds: ['stories260k'], key: null }
const made: ApiAccessView = { ...none, key: { masked: 'nk-Ab…wxyz', createdAt: 1 } }

describe('API access store', () => {
  it('holds a new key in full until the screen forgets it, then only its masked form', async () => {
    const store = createApiAccessStore(fakeBridge({ 'api.get': () => none, 'api.createKey': () => ({ apiKey: 'nk-Abcdwxyz', view: made }) }))
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
    await store.getState().revokeKey()
    expect(store.getState()).toMatchObject({ freshKey: null, view: none, error: null })

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
})
