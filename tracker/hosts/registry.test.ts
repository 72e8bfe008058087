import { afterEach, describe, expect, it } from 'vitest'
import { IDLE_STATE } from '../../protocol'
import { TEST_PROFILE as PROFILE } from '../../test/peers'
import { HostRegistry } from './registry'

const HOST = { hostId: 'h1', publicKey: 'key-1', profile: PROFILE, verifiedFor: 'model@0-2' }

describe('the host registry across tracker instances', () => {
  let registry: HostRegistry
  afterEach(() => registry.close())

  it(
    'a host that moved to another instance while this one still had its half-open connection is routed from there ' +
      'once that connection is found dead',
    () => {
      registry = new HostRegistry(1000)
      registry.hello('h1', 'key-1', PROFILE, IDLE_STATE, 0)
      // Instance B says it holds h1 now; this instance's connection has not noticed it is dead yet.
      registry.mirror('instance-b', { ...HOST, state: { ...IDLE_STATE, activeSessions: 1 }, online: true }, 10)
      expect(registry.get('h1')).toMatchObject({ owner: null, online: true })
      registry.markOffline('h1', 'ping timeout')
      expect(registry.get('h1')).toMatchObject({ owner: 'instance-b', online: true, verifiedFor: 'model@0-2' })
      // B's heartbeat batches keep it online here.
      registry.heartbeat('h1', 2, 5000, 'instance-b')
      registry.sweep(6000)
      expect(registry.get('h1')).toMatchObject({ online: true, state: { activeSessions: 2 } })
    },
  )

  it('forgets the other instance’s word when the host comes back here, or that instance says it left', () => {
    registry = new HostRegistry(1000)
    registry.hello('h1', 'key-1', PROFILE, IDLE_STATE, 0)
    registry.mirror('instance-b', { ...HOST, state: IDLE_STATE, online: true }, 10)
    registry.mirror('instance-b', { ...HOST, state: IDLE_STATE, online: false }, 20)
    registry.markOffline('h1', 'ping timeout')
    expect(registry.get('h1')).toMatchObject({ owner: null, online: false })

    registry.hello('h1', 'key-1', PROFILE, IDLE_STATE, 30)
    registry.mirror('instance-b', { ...HOST, state: IDLE_STATE, online: true }, 40)
    registry.hello('h1', 'key-1', PROFILE, IDLE_STATE, 50)
    registry.markOffline('h1', 'disconnected')
    expect(registry.get('h1')).toMatchObject({ owner: null, online: false })
  })
})

describe("the host registry's count of a host's sessions", () => {
  it(
    'is its heartbeats’: a state update made with an older ' + 'count (a measured speed, a drain) does not reset it',
    () => {
      const registry = new HostRegistry(1000)
      try {
        registry.hello('h1', 'key-1', PROFILE, { ...IDLE_STATE, status: 'ready', maxSessions: 4 }, 0)
        registry.heartbeat('h1', 3, 100)
        registry.updateState(
          'h1',
          { ...IDLE_STATE, status: 'ready', maxSessions: 4, msPerBlock: 2, activeSessions: 0 },
          200,
        )
        expect(registry.get('h1')?.state).toMatchObject({ activeSessions: 3, msPerBlock: 2 })
        registry.heartbeat('h1', 1, 300)
        expect(registry.get('h1')?.state.activeSessions).toBe(1)
      } finally {
        registry.close()
      }
    },
  )
})
