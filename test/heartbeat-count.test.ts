// The tracker's count of a host's sessions, on a real tracker and host (stories260K): a session it routes counts
// against the host until a heartbeat of the host's lists it. A heartbeat computed before the client opened the session,
// arriving after the route, used to reset that count, so a full host looked free for a beat (and a probe of it then was
// refused and counted against it).
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

// A long beat, so the first heartbeat after a route comes well
// within the two beats a routed session waits for its open.
const HEARTBEAT_MS = 2000

describe(`a host's session count at the tracker `, () => {
  let swarm: InProcessSwarm
  let client: SwarmClient
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-heartbeat-count-')
    swarm = await startSwarm(scratch.dir, STORIES_260K, [], { heartbeatMs: HEARTBEAT_MS })
    await swarm.addHost([0, swarm.manifest.nLayer])
    client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    cleanup = async () => {
      client.close()
      await swarm.close()
      await scratch.cleanup()
    }
  }, 120_000)
  afterAll(() => cleanup?.())

  const counted = () => {
    const h = swarm.tracker.registry.get(swarm.hosts[0]?.hostId ?? '')
    return { open: h?.state.activeSessions ?? -1, routed: h?.routedSinceHeartbeat ?? -1 }
  }
  /** Resolves once the tracker has taken another heartbeat of the host's (state updates aside). */
  const nextHeartbeat = async () => {
    const registry = swarm.tracker.registry
    const heartbeat = registry.heartbeat
    await new Promise<void>((resolve) => {
      registry.heartbeat = (...args) => {
        heartbeat.apply(registry, args)
        registry.heartbeat = heartbeat
        resolve()
      }
    })
  }

  it('a heartbeat sent before the open keeps the routed session counted; one after it holds it; a route never ' +
    'opened is forgotten', async () => {
    const modelId = swarm.manifest.modelId
    const session = randomBytes(16).toString('hex')
    const plan = { modelId, maxTokens: 128, promptTokens: 8, exclude: [], session }
    await callRpc(client.tracker, ClientToTracker, 'route.plan', plan)
    expect(counted()).toMatchObject({ open: 0, routed: 1 })
    // the host has not seen the open: its heartbeat does not list the session, which stays counted
    await nextHeartbeat()
    expect(counted()).toMatchObject({ open: 0, routed: 1 })

    // the client opens it (a chat on the same session): once a heartbeat lists it, the host's own count holds it, once
    const run = client.generate({
      modelId,
      prompt: 'Once upon a time',
      maxTokens: 64,
      stopAtEog: false,
      session,
      sampling: { temperature: 0 },
    })
    expect((await run.next()).done).toBe(false)
    // (a heartbeat made before the open may still be on its way: the count holds it by the one after)
    await vi.waitFor(() => expect(counted()).toMatchObject({ open: 1, routed: 0 }), {
      timeout: 3 * HEARTBEAT_MS,
      interval: 20,
    })
    await run.return(undefined as never)

    // a route that is never opened stops counting two beats after it was routed
    await callRpc(client.tracker, ClientToTracker, 'route.plan', { ...plan, session: randomBytes(16).toString('hex') })
    expect(counted().routed).toBe(1)
    await vi.waitFor(() => expect(counted()).toMatchObject({ open: 0, routed: 0 }), {
      timeout: 6 * HEARTBEAT_MS,
      interval: 50,
    })
  }, 120_000)
})
