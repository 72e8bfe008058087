import { describe, expect, it } from 'vitest'
import { type BlockRange, LatencyReport, MAX_ROUND_TRIP_MS } from '../../protocol'
import { clientLatencyId, MeasuredLatencies } from './measured-latencies'
import { planRoute } from './route-planner'
import type { ServedSpan, SwarmView } from './swarm-view'

function host(hostId: string, blocks: BlockRange, msPerBlock = 1): ServedSpan {
  return {
    hostId,
    blocks,
    msPerBlock,
    relay: false,
    activeSessions: 0,
    maxSessions: 8,
    kvFreeTokens: 8192,
    reputation: 0.9,
    status: 'ready',
  }
}

/**
 * Two hosts serving the same four blocks: `near` slightly slower
 * to compute, so an unmeasured swarm routes through `far`.
 */
function twoHosts(latency: MeasuredLatencies): SwarmView {
  return { nBlocks: 4, spans: [host('far', [0, 4], 1), host('near', [0, 4], 1.5)], latency }
}

/** The host a client's route goes through. */
function routedFor(view: SwarmView, client: string): string {
  return planRoute(view, { tokens: 16, relayedBy: clientLatencyId(client) })
    .hops.map((h) => h.hostId)
    .join(',')
}

describe('MeasuredLatencies', () => {
  it('routes a client around a host it measured slow, and back once its new pings are fast', () => {
    let now = 0
    const latency = new MeasuredLatencies({ refreshMs: 1000 }, () => now)
    const view = twoHosts(latency)
    expect(routedFor(view, 'alice')).toBe('far')
    latency.record('alice', 'far', [160, 161, 159])
    latency.record('alice', 'near', [0.3, 0.2, 0.4])
    expect(routedFor(view, 'alice')).toBe('near')
    // The slow host recovers: the tracker asks alice to measure it again once her samples are stale.
    now += 1500
    expect(latency.staleFor('alice', ['far', 'near'], 4)).toEqual(['far', 'near'])
    latency.record('alice', 'far', [0.1, 0.1, 0.1])
    latency.record('alice', 'far', [0.1, 0.1])
    expect(routedFor(view, 'alice')).toBe('far')
  })

  it('charges a relayed route each hop’s round trip from its client, so a slow middle host is routed around', () => {
    const latency = new MeasuredLatencies()
    for (const [id, rtt] of [
      ['a', 1],
      ['b-slow', 200],
      ['b-spare', 2],
      ['c', 1],
    ] as const)
      latency.record('alice', id, [rtt])
    const view: SwarmView = {
      nBlocks: 6,
      spans: [host('a', [0, 2]), host('b-slow', [2, 4], 0.5), host('b-spare', [2, 4], 1), host('c', [4, 6])],
      latency,
    }
    const route = planRoute(view, { tokens: 16, relayedBy: clientLatencyId('alice') })
    expect(route.hops.map((h) => h.hostId)).toEqual(['a', 'b-spare', 'c'])
    // What the client waits per token: each hop's round trip plus its compute (6 blocks at 1 ms).
    expect(route.expectedMsPerToken).toBeCloseTo(1 + 2 + 1 + 6, 6)
  })

  it(
    'a lying client steers only its own routes: a slow host reported as 0 ms and a fast one as a minute move no ' +
      'other client',
    () => {
      const latency = new MeasuredLatencies({ quorum: 3 })
      const view = twoHosts(latency)
      for (const honest of ['h1', 'h2', 'h3']) {
        latency.record(honest, 'far', [150, 170, 160])
        latency.record(honest, 'near', [1, 2, 1])
      }
      // The liar floods: many samples, the wildest values the protocol lets through, again and again.
      for (let i = 0; i < 50; i++) {
        latency.record('liar', 'far', [0, 0, 0, 0, 0, 0, 0, 0])
        latency.record('liar', 'near', Array(8).fill(MAX_ROUND_TRIP_MS))
      }
      expect(routedFor(view, 'liar')).toBe('far')
      // A newcomer has measured nothing: it gets the swarm's median, where the liar is one vote of four.
      expect(routedFor(view, 'newcomer')).toBe('near')
      expect(latency.roundTrip('newcomer', 'far')).toBe(160)
      expect(latency.roundTrip('newcomer', 'near')).toBe(1)
      for (const honest of ['h1', 'h2', 'h3']) expect(routedFor(view, honest)).toBe('near')
    },
  )

  it('a lone reporter sets no other client’s view: under a quorum, unmeasured links cost the default', () => {
    const latency = new MeasuredLatencies({ quorum: 3 })
    latency.record('liar', 'far', [MAX_ROUND_TRIP_MS])
    latency.record('liar2', 'far', [MAX_ROUND_TRIP_MS])
    expect(latency.roundTrip('newcomer', 'far')).toBeUndefined()
    expect(routedFor(twoHosts(latency), 'newcomer')).toBe('far')
  })

  it('refuses reports past the protocol’s bounds before the tracker reads them', () => {
    const hostId = 'a'.repeat(20)
    expect(LatencyReport.safeParse({ links: [{ hostId, roundTripMs: [1e9] }] }).success).toBe(false)
    expect(LatencyReport.safeParse({ links: [{ hostId, roundTripMs: [-1] }] }).success).toBe(false)
    expect(LatencyReport.safeParse({ links: [{ hostId, roundTripMs: Array(17).fill(1) }] }).success).toBe(false)
    expect(LatencyReport.safeParse({ links: Array(65).fill({ hostId, roundTripMs: [1] }) }).success).toBe(false)
    expect(LatencyReport.safeParse({ links: [{ hostId, roundTripMs: [0.4, 80] }] }).success).toBe(true)
  })

  it('rebuilds the planner only when a link changes materially, not on jitter', () => {
    const latency = new MeasuredLatencies({ materialMs: 2, materialRatio: 0.2 })
    const changes: string[] = []
    latency.on('changed', (hostId) => changes.push(hostId))
    latency.record('alice', 'far', [50])
    latency.record('alice', 'far', [51, 50.5])
    expect(changes).toEqual(['far'])
    latency.record('alice', 'far', [160, 160, 160, 160])
    expect(changes).toEqual(['far', 'far'])
  })
})
