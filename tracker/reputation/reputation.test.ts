// Reputation from completed and failed steps, latency against advertised speed and uptime; kept
// as history and fed to the route planner, which routes low scores last.

import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { HardwareProfile, ServingState } from '../../protocol'
import { scratchDir } from '../../test/models'
import { TEST_PROFILE } from '../../test/peers'
import { HostRegistry } from '../registry'
import { SqliteTrackerStore } from '../store'
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

let store: SqliteTrackerStore
let registry: HostRegistry
let reputation: Reputation

afterEach(() => {
  reputation.close()
  registry.close()
  store.close()
})

describe('host reputation', () => {
  it('starts a new host at 1, lowers it for failed steps and slow round trips, and keeps the history', async () => {
    store = new SqliteTrackerStore(':memory:')
    registry = new HostRegistry(1000)
    reputation = new Reputation(store.ledger, registry, 20)
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
    const history = reputation.history('bbbbbbbbbbbbbbbbbbbb')
    expect(history.length).toBeGreaterThan(0)
    expect(history[0]?.components).toMatchObject({ failedSteps: 30 })
  })

  it('keeps a host’s tallies across a tracker restart on the same file, so a failing host cannot start over by waiting for one', async () => {
    const { dir, cleanup } = await scratchDir()
    try {
      const file = join(dir, 'tracker.sqlite')
      const checksOf = (s: SqliteTrackerStore) => ({ store: s.checks, auditsScore: () => 1, onProbation: () => false })
      store = new SqliteTrackerStore(file)
      registry = new HostRegistry(1000)
      reputation = new Reputation(store.ledger, registry, 20, checksOf(store))
      registry.hello('cccccccccccccccccccc', 'k3', PROFILE, STATE)
      reputation.completed('cccccccccccccccccccc', 40)
      reputation.failed('cccccccccccccccccccc', 40)
      const before = reputation.of('cccccccccccccccccccc')
      reputation.close()
      registry.close()
      store.close()

      store = new SqliteTrackerStore(file)
      registry = new HostRegistry(1000)
      reputation = new Reputation(store.ledger, registry, 20, checksOf(store))
      const after = reputation.of('cccccccccccccccccccc')
      expect(after.failedSteps).toBe(40)
      expect(after.completedSteps).toBe(40)
      expect(after.components.completion).toBeCloseTo(before.components.completion)
      expect(after.score).toBeLessThan(0.5)
    } finally {
      await cleanup()
    }
  })
})
