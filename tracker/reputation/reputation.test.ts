// Reputation from completed and failed steps, latency against advertised speed and uptime; kept
// as history and fed to the route planner, which routes low scores last.

import { afterEach, describe, expect, it } from 'vitest'
import type { HardwareProfile, ServingState } from '../../protocol'
import { TEST_PROFILE } from '../../test/peers'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { HostRegistry } from '../hosts/registry'
import { Reputation } from './reputation'

const PROFILE: HardwareProfile = TEST_PROFILE
const STATE: ServingState = {
  modelId: 'toy',
  blocks: [0, 4],
  status: 'ready',
  progress: 1,
  kvCapacityTokens: 1024,
  activeSessions: 0,
  maxSessions: 4,
  msPerBlock: 2,
  endpoint: 'ws://127.0.0.1:1/',
}

let store: TrackerStore
let registry: HostRegistry
let reputation: Reputation

afterEach(async () => {
  reputation.close()
  registry.close()
  await reputation.flushed()
  await store.close()
})

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`host reputation on ${engine.name}`, () => {
    engine.setUp()
    it('starts a new host at 1, lowers it for failed steps and slow round trips, and keeps the history', async () => {
      store = await (await engine.fresh()).open()
      registry = new HostRegistry(1000)
      reputation = new Reputation(store.reputationHistory, registry, 20)
      registry.hello('aaaaaaaaaaaaaaaaaaaa', 'k1', PROFILE, STATE)
      registry.hello('bbbbbbbbbbbbbbbbbbbb', 'k2', PROFILE, STATE)
      expect(reputation.score('aaaaaaaaaaaaaaaaaaaa')).toBeCloseTo(1)
      reputation.completed('aaaaaaaaaaaaaaaaaaaa', 100)
      reputation.completed('bbbbbbbbbbbbbbbbbbbb', 100)
      reputation.failed('bbbbbbbbbbbbbbbbbbbb', 30)
      // Advertised 4 blocks × 2 ms; a 60 ms round trip is far slower than that.
      for (let i = 0; i < 10; i++) reputation.observedLatency('bbbbbbbbbbbbbbbbbbbb', 4, 60)
      registry.markOffline('bbbbbbbbbbbbbbbbbbbb', 'test')
      await new Promise((r) => setTimeout(r, 100))
      const good = reputation.of('aaaaaaaaaaaaaaaaaaaa')
      const bad = reputation.of('bbbbbbbbbbbbbbbbbbbb')
      expect(good.score).toBeGreaterThan(0.95)
      expect(bad.score).toBeLessThan(0.7)
      expect(bad.components.completion).toBeCloseTo(120 / 150)
      expect(bad.components.latency).toBeLessThan(0.4)
      expect(bad.components.uptime).toBeLessThan(0.5)
      expect(bad.failedSteps).toBe(30)
      await reputation.flushed()
      const history = await reputation.history('bbbbbbbbbbbbbbbbbbbb')
      expect(history.length).toBeGreaterThan(0)
      expect(history[0]?.components).toMatchObject({ failedSteps: 30 })
    })

    it(
      'keeps a host’s tallies across a tracker restart on the same file, so a failing host cannot start over by ' +
        'waiting for one',
      async () => {
        const database = await engine.fresh()
        {
          const checksOf = (s: TrackerStore) => ({ store: s.checks, auditsScore: () => 1, onProbation: () => false })
          store = await database.open()
          registry = new HostRegistry(1000)
          reputation = new Reputation(store.reputationHistory, registry, 20, checksOf(store))
          registry.hello('cccccccccccccccccccc', 'k3', PROFILE, STATE)
          reputation.completed('cccccccccccccccccccc', 40)
          reputation.failed('cccccccccccccccccccc', 40)
          const before = reputation.of('cccccccccccccccccccc')
          reputation.close()
          registry.close()
          await reputation.flushed()
          await store.close()

          store = await database.open()
          registry = new HostRegistry(1000)
          reputation = new Reputation(store.reputationHistory, registry, 20, checksOf(store))
          // A host's hello reads its tally (tracker/rpc/host-rpc.ts).
          await reputation.load('cccccccccccccccccccc')
          const after = reputation.of('cccccccccccccccccccc')
          expect(after.failedSteps).toBe(40)
          expect(after.completedSteps).toBe(40)
          expect(after.components.completion).toBeCloseTo(before.components.completion)
          expect(after.score).toBeLessThan(0.5)
        }
      },
    )
  })
