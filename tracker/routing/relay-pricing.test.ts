// Issue 39: the planner prices every hop by measured round trips, relayed ones included. A relayed host is measured
// through its relay (a ping frame the host answers, link-latency.ts), so its measured round trip holds the relay's
// trip; only a relayed host nobody has measured pays the relay's constant cost. No route prefers a relayed hop over a
// direct one whose measured round trip is lower, whichever way the client reaches the hops.
import { describe, expect, it } from 'vitest'
import type { BlockRange } from '../../protocol'
import { DEFAULT_ROUTE_COSTS } from './costs'
import { clientLatencyId, MeasuredLatencies } from './measured-latencies'
import { planRoute } from './route-planner'
import { CLIENT, LatencyMatrix, type ServedSpan, type SwarmView } from './swarm-view'

const { defaultLatencyMs: LINK, relayPenaltyMs: RELAY } = DEFAULT_ROUTE_COSTS

function host(hostId: string, blocks: BlockRange, more: Partial<ServedSpan> = {}): ServedSpan {
  return {
    ...{ hostId, blocks, msPerBlock: 5, relay: false, activeSessions: 0, maxSessions: 8 },
    ...{ kvFreeTokens: 8192, reputation: 0.9, status: 'ready' as const },
    ...more,
  }
}

/** Alice's measured round trips, as the tracker records them from her latency reports. */
function measuredBy(roundTrips: Record<string, number>): MeasuredLatencies {
  const latencies = new MeasuredLatencies()
  for (const [hostId, ms] of Object.entries(roundTrips)) latencies.record('alice', hostId, [ms, ms, ms])
  return latencies
}

const ALICE = clientLatencyId('alice')

describe('relayed hops priced by their measured round trips', () => {
  it(
    'never prefers a relayed hop over a direct one whose measured round trip is lower, and takes a relayed one ' +
      'that is measured faster',
    () => {
      // Round trips, ms, of a direct host and a host behind the tracker's relay, equally fast at compute; each pair
      // measured by the client (the relayed one through the relay): the lower round trip wins, either way round.
      const trips = [5, 20, 40, 60, 80, 95, 120, 200, 400]
      let checked = 0
      for (const direct of trips) {
        for (const relayed of trips) {
          if (direct === relayed) continue
          const view: SwarmView = {
            nBlocks: 4,
            spans: [host('direct', [0, 4]), host('relayed', [0, 4], { relay: true })],
            latency: measuredBy({ direct, relayed }),
          }
          const route = planRoute(view, { tokens: 1, relayedBy: ALICE })
          const chosen = route.hops.map((h) => h.hostId)
          expect(chosen, `direct ${direct} ms, relayed ${relayed} ms`).toEqual([
            direct < relayed ? 'direct' : 'relayed',
          ])
          // the time the user is told is the measured round trip and compute, with no constant added for the relay
          expect(route.expectedMsPerToken).toBeCloseTo(Math.min(direct, relayed) + 4 * 5, 9)
          checked++
        }
      }
      expect(checked).toBe(trips.length * (trips.length - 1))
    },
  )

  it('charges the relay only to a relayed host nobody has measured: a slow measured direct host loses to it', () => {
    // A host the client has not measured is taken as typical of those it has: of 10 and 200 ms, the upper median,
    // 200 ms; behind the tracker's relay it costs that and the relay's 25 ms, more than the slow direct host's 200.
    // (The fast direct host is measured near but computes slowly.)
    const view: SwarmView = {
      nBlocks: 4,
      spans: [
        host('slow-direct', [0, 4]),
        host('fast-direct', [0, 4], { msPerBlock: 500 }),
        host('unmeasured-relayed', [0, 4], { relay: true }),
      ],
      latency: measuredBy({ 'slow-direct': 200, 'fast-direct': 10 }),
    }
    const route = planRoute(view, { tokens: 1, relayedBy: ALICE })
    expect(route.hops.map((h) => h.hostId)).toEqual(['slow-direct'])
    // once measured through the relay at 60 ms, the relayed host wins by its measurement alone
    const measured = planRoute(
      { ...view, latency: measuredBy({ 'slow-direct': 200, 'fast-direct': 10, 'unmeasured-relayed': 60 }) },
      { tokens: 1, relayedBy: ALICE },
    )
    expect(measured.hops.map((h) => h.hostId)).toEqual(['unmeasured-relayed'])
    expect(measured.expectedMsPerToken).toBeCloseTo(60 + 4 * 5, 9)
  })

  it('hop to hop too: a relayed host measured through its relay pays no constant, an unmeasured one does', () => {
    const spans = [host('direct', [0, 4]), host('relayed', [0, 4], { relay: true })]
    // one-way ms from the client, measured: the relayed host's (through the relay) is the lower
    const measured = new LatencyMatrix().set(CLIENT, 'direct', 30).set(CLIENT, 'relayed', 20)
    const route = planRoute({ nBlocks: 4, spans, latency: measured }, { tokens: 1 })
    expect(route.hops.map((h) => h.hostId)).toEqual(['relayed'])
    expect(route.expectedMsPerToken).toBe(20 + 4 * 5 + LINK)
    // the relayed host unmeasured: the default link and the relay's cost, against the direct host's measured 30 ms
    const unmeasured = new LatencyMatrix().set(CLIENT, 'direct', 30)
    const around = planRoute({ nBlocks: 4, spans, latency: unmeasured }, { tokens: 1 })
    expect(around.hops.map((h) => h.hostId)).toEqual(['direct'])
    const relayedOnly = planRoute({ nBlocks: 4, spans: [spans[1] as ServedSpan], latency: unmeasured }, { tokens: 1 })
    expect(relayedOnly.expectedMsPerToken).toBe(LINK + RELAY + 4 * 5 + LINK)
  })
})
