import { describe, expect, it } from 'vitest'
import { type BlockRange, NeuronError } from '../../protocol'
import { fastestByFullSearch } from '../../test/route-oracle'
import { DEFAULT_ROUTE_COSTS } from './costs'
import { planRoute, RoutePlanner } from './route-planner'
import { CLIENT, LatencyMatrix, type LatencyTable, NO_LATENCIES, type ServedSpan, type SwarmView } from './swarm-view'

const LINK = DEFAULT_ROUTE_COSTS.defaultLatencyMs
const RELAY = DEFAULT_ROUTE_COSTS.relayPenaltyMs

function host(hostId: string, blocks: BlockRange, msPerBlock: number, more: Partial<ServedSpan> = {}): ServedSpan {
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
    ...more,
  }
}

function swarm(nBlocks: number, spans: ServedSpan[], latency: LatencyTable = NO_LATENCIES): SwarmView {
  return { nBlocks, spans, latency }
}

/** What a user sees of a route: who serves which blocks. */
function hopsOf(view: SwarmView, request: Parameters<typeof planRoute>[1]): string[] {
  return planRoute(view, request).hops.map((h) => `${h.hostId}[${h.blocks[0]},${h.blocks[1]})`)
}

function noRoute(fn: () => unknown): NeuronError {
  try {
    fn()
  } catch (error) {
    if (error instanceof NeuronError) return error
    throw error
  }
  throw new Error('expected a no_route error, but a route was planned')
}

describe('planRoute', () => {
  it('chains three hosts that tile blocks 0..5, and reports compute + every link as the time per token', () => {
    const view = swarm(5, [host('a', [0, 2], 10), host('b', [2, 4], 10), host('c', [4, 5], 10)])
    const route = planRoute(view, { tokens: 1024 })
    expect(route.hops.map((h) => [h.hostId, h.blocks])).toEqual([
      ['a', [0, 2]],
      ['b', [2, 4]],
      ['c', [4, 5]],
    ])
    // client → a → b → c → client: four links, five blocks of compute.
    expect(route.expectedMsPerToken).toBe(5 * 10 + 4 * LINK)
    expect(route.blocks).toEqual([0, 5])
  })

  it('takes one host for the whole model when that beats paying for the extra links', () => {
    const view = swarm(6, [host('whole', [0, 6], 10), host('first', [0, 3], 8), host('second', [3, 6], 8)])
    expect(hopsOf(view, { tokens: 1 })).toEqual(['whole[0,6)'])
  })

  it('uses part of a host range when a faster host serves the rest', () => {
    // slow covers [0, 4) at 10 ms/block; fast covers [2, 6) at 2 ms/block: slow serves only [0, 2).
    const view = swarm(6, [host('slow', [0, 4], 10), host('fast', [2, 6], 2)])
    const route = planRoute(view, { tokens: 1 })
    expect(route.hops.map((h) => [h.hostId, h.blocks])).toEqual([
      ['slow', [0, 2]],
      ['fast', [2, 6]],
    ])
    expect(route.expectedMsPerToken).toBe(2 * 10 + 4 * 2 + 3 * LINK)
  })

  it('names the uncovered blocks when nobody serves them', () => {
    const view = swarm(20, [host('a', [0, 12], 5), host('b', [16, 20], 5)])
    const error = noRoute(() => planRoute(view, { tokens: 1 }))
    expect(error.code).toBe('no_route')
    expect(error.details.uncovered).toEqual([[12, 16]])
    expect(error.message).toContain('[12, 16)')
    expect(error.message).toContain('no host serves them at all')
  })

  it('skips hosts that are full, short of KV, or not ready, and says which of these blocked the route', () => {
    const view = swarm(4, [
      host('a', [0, 2], 5),
      host('busy', [2, 4], 5, { activeSessions: 4, maxSessions: 4 }),
      host('small-kv', [2, 4], 5, { kvFreeTokens: 512 }),
      host('loading', [2, 4], 5, { status: 'loading' }),
      host('draining', [2, 4], 5, { status: 'draining' }),
    ])
    const error = noRoute(() => planRoute(view, { tokens: 2048 }))
    expect(error.details.uncovered).toEqual([[2, 4]])
    expect(error.details.unavailable).toEqual({
      'no free session': 1,
      'too little free KV': 1,
      loading: 1,
      draining: 1,
    })
    expect(error.message).toContain('2048 free KV tokens')
    // The same swarm routes a short session through the host with a little KV left.
    expect(hopsOf(view, { tokens: 256 })).toEqual(['a[0,2)', 'small-kv[2,4)'])
  })

  it('prefers the idle host over an equally fast busy one', () => {
    const view = swarm(4, [host('busy', [0, 4], 5, { activeSessions: 6, maxSessions: 8 }), host('idle', [0, 4], 5)])
    expect(hopsOf(view, { tokens: 1 })).toEqual(['idle[0,4)'])
    // Load inflates compute: 6 of 8 sessions makes the busy host 1.75× slower per token.
    const busyOnly = swarm(4, [host('busy', [0, 4], 5, { activeSessions: 6, maxSessions: 8 })])
    expect(planRoute(busyOnly, { tokens: 1 }).hops[0]?.computeMs).toBe(4 * 5 * 1.75)
  })

  it('routes around a relayed host unless it is faster by more than the relay penalty', () => {
    const direct = host('direct', [0, 4], 5)
    expect(hopsOf(swarm(4, [host('relayed', [0, 4], 5, { relay: true }), direct]), { tokens: 1 })).toEqual([
      'direct[0,4)',
    ])
    // 4 blocks × 10 ms saved against a 25 ms relay penalty: the relayed host wins, and the penalty shows in the time.
    const route = planRoute(swarm(4, [host('relayed', [0, 4], 2.5, { relay: true }), host('direct', [0, 4], 15)]), {
      tokens: 1,
    })
    expect(route.hops.map((h) => h.hostId)).toEqual(['relayed'])
    expect(route.hops[0]?.relay).toBe(true)
    expect(route.expectedMsPerToken).toBe(4 * 2.5 + RELAY + 2 * LINK)
  })

  it('routes a low-reputation host last: only for blocks no one else serves', () => {
    const view = swarm(6, [
      host('shady', [0, 6], 1, { reputation: 0.1 }),
      host('honest-a', [0, 3], 20),
      host('honest-b', [3, 6], 20),
    ])
    expect(hopsOf(view, { tokens: 1 })).toEqual(['honest-a[0,3)', 'honest-b[3,6)'])
    // Without honest-b, the shady host is the only way through [3, 6), and it takes just those blocks.
    const gap = swarm(6, [host('shady', [0, 6], 1, { reputation: 0.1 }), host('honest-a', [0, 3], 20)])
    expect(hopsOf(gap, { tokens: 1 })).toEqual(['honest-a[0,3)', 'shady[3,6)'])
  })

  it('follows measured latency: the client’s nearby first hop, and the next hop near it', () => {
    const latency = new LatencyMatrix()
      .setBoth('alice', 'eu-1', 5)
      .setBoth('alice', 'us-1', 90)
      .setBoth('eu-1', 'eu-2', 3)
      .setBoth('eu-1', 'us-2', 80)
      .setBoth('eu-2', 'alice', 6)
    const view = swarm(
      8,
      [host('us-1', [0, 4], 5), host('eu-1', [0, 4], 6), host('us-2', [4, 8], 5), host('eu-2', [4, 8], 6)],
      latency,
    )
    const route = planRoute(view, { tokens: 1, previousHop: 'alice', nextHop: 'alice' })
    expect(route.hops.map((h) => h.hostId)).toEqual(['eu-1', 'eu-2'])
    expect(route.expectedMsPerToken).toBe(5 + 4 * 6 + 3 + 4 * 6 + 6)
  })

  it('plans a failover replacement for one span, next to the hops that stay', () => {
    const latency = new LatencyMatrix().setBoth('a', 'spare-near', 2).setBoth('spare-near', 'c', 2)
    const view = swarm(
      6,
      [
        host('a', [0, 2], 5),
        host('b', [2, 4], 5),
        host('c', [4, 6], 5),
        host('spare-far', [1, 5], 4),
        host('spare-near', [2, 4], 5),
      ],
      latency,
    )
    // b died: find hosts for [2, 4) other than b, between a and c.
    const replacement = planRoute(view, {
      tokens: 100,
      span: [2, 4],
      exclude: new Set(['b']),
      previousHop: 'a',
      nextHop: 'c',
    })
    expect(replacement.blocks).toEqual([2, 4])
    expect(replacement.hops.map((h) => [h.hostId, h.blocks])).toEqual([['spare-near', [2, 4]]])
    expect(replacement.expectedMsPerToken).toBe(2 + 2 * 5 + 2)
    // With both spares gone too, the error names the span's blocks only.
    const error = noRoute(() =>
      planRoute(view, {
        tokens: 100,
        span: [2, 4],
        exclude: new Set(['b', 'spare-near', 'spare-far']),
        previousHop: 'a',
        nextHop: 'c',
      }),
    )
    expect(error.details.uncovered).toEqual([[2, 4]])
    expect(error.details.unavailable).toEqual({ excluded: 3 })
  })

  it('never puts one host on a route twice, even when a detour through a fast host would save time', () => {
    const latency = new LatencyMatrix().setBoth('big', 'quick', 1)
    // big → quick → big would save 99 ms of compute for 2 ms of
    // links, but big would hold two KV caches for one session.
    const view = swarm(6, [host('big', [0, 6], 100), host('quick', [2, 3], 1)], latency)
    const route = planRoute(view, { tokens: 1 })
    const hosts = route.hops.map((h) => h.hostId)
    expect(new Set(hosts).size).toBe(hosts.length)
    expect(route.hops.map((h) => [h.hostId, h.blocks])).toEqual([['big', [0, 6]]])
    expect(route.expectedMsPerToken).toBe(6 * 100 + 2 * LINK)
  })

  it('gives the same route whatever order the registry lists hosts in', () => {
    const spans = [
      host('a', [0, 3], 5),
      host('b', [0, 3], 5),
      host('c', [3, 6], 5),
      host('d', [3, 6], 5),
      host('e', [0, 6], 12),
    ]
    const expected = hopsOf(swarm(6, spans), { tokens: 1 })
    expect(hopsOf(swarm(6, [...spans].reverse()), { tokens: 1 })).toEqual(expected)
    expect(hopsOf(swarm(6, [spans[2], spans[4], spans[0], spans[3], spans[1]] as ServedSpan[]), { tokens: 1 })).toEqual(
      expected,
    )
  })

  it('finds the fastest route that a full search over every host sequence finds, on random small swarms', () => {
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    for (let trial = 0; trial < 200; trial++) {
      const nBlocks = 6
      const spans: ServedSpan[] = []
      const latency = new LatencyMatrix()
      for (let i = 0; i < 6; i++) {
        const begin = Math.floor(random() * nBlocks)
        const end = begin + 1 + Math.floor(random() * (nBlocks - begin))
        spans.push(
          host(`h${i}`, [begin, end], 1 + Math.floor(random() * 40), {
            relay: random() < 0.2,
            activeSessions: Math.floor(random() * 4),
          }),
        )
      }
      for (const from of [CLIENT, ...spans.map((s) => s.hostId)]) {
        for (const to of [CLIENT, ...spans.map((s) => s.hostId)])
          if (from !== to && random() < 0.4) latency.set(from, to, Math.floor(random() * 80))
      }
      const view = swarm(nBlocks, spans, latency)
      const best = fastestByFullSearch(view)
      if (best === undefined) {
        expect(() => planRoute(view, { tokens: 1 })).toThrow(NeuronError)
        continue
      }
      const route = planRoute(view, { tokens: 1 })
      expect(route.expectedMsPerToken, `trial ${trial}`).toBeCloseTo(best, 9)
      const hosts = route.hops.map((h) => h.hostId)
      expect(new Set(hosts).size).toBe(hosts.length)
    }
  })

  it(
    'for a client that relays every hop, finds the route with the least Σ (round trip from the client + compute), ' +
      'on random small swarms',
    () => {
      let seed = 11
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648
        return seed / 2147483648
      }
      for (let trial = 0; trial < 200; trial++) {
        const nBlocks = 6
        const spans: ServedSpan[] = []
        const latency = new LatencyMatrix()
        for (let i = 0; i < 6; i++) {
          const begin = Math.floor(random() * nBlocks)
          const end = begin + 1 + Math.floor(random() * (nBlocks - begin))
          spans.push(
            host(`h${i}`, [begin, end], 1 + Math.floor(random() * 40), {
              relay: random() < 0.2,
              activeSessions: Math.floor(random() * 4),
            }),
          )
          // Some hosts measured from alice (either way round), the rest taken as typical of those.
          if (random() < 0.6)
            latency.set('alice', `h${i}`, Math.floor(random() * 80)).set(`h${i}`, 'alice', Math.floor(random() * 80))
        }
        const view = swarm(nBlocks, spans, latency)
        const best = fastestRelayed(view, 'alice')
        if (best === undefined) {
          expect(() => planRoute(view, { tokens: 1, relayedBy: 'alice' })).toThrow(NeuronError)
          continue
        }
        const route = planRoute(view, { tokens: 1, relayedBy: 'alice' })
        expect(route.expectedMsPerToken, `trial ${trial}`).toBeCloseTo(best, 9)
      }
    },
  )

  it('rejects a span outside the model with a message that says the valid range', () => {
    const view = swarm(4, [host('a', [0, 4], 5)])
    const error = noRoute(() => planRoute(view, { tokens: 1, span: [2, 9] }))
    expect(error.code).toBe('bad_route_request')
    expect(error.message).toContain('0 ≤ a < b ≤ 4')
  })

  it('plans many routes from one planner, each request on its own', () => {
    const planner = new RoutePlanner(swarm(4, [host('a', [0, 4], 5), host('b', [0, 4], 6)]))
    expect(planner.plan({ tokens: 1 }).hops[0]?.hostId).toBe('a')
    expect(planner.plan({ tokens: 1, exclude: new Set(['a']) }).hops[0]?.hostId).toBe('b')
    expect(planner.plan({ tokens: 1 }).hops[0]?.hostId).toBe('a')
  })
})

/**
 * Every sequence of distinct hosts, each hop costing its round trip from `client` and its compute: measured (through
 * its relay, for a relayed host), else the median of the measured round trips (a host not yet measured is taken as
 * typical), else twice the default, plus the relay penalty for a relayed host.
 */
function fastestRelayed(view: SwarmView, client: string): number | undefined {
  const measured = (h: string) => {
    const [there, back] = [view.latency.ms(client, h), view.latency.ms(h, client)]
    return there === undefined && back === undefined ? undefined : (there ?? back ?? 0) + (back ?? there ?? 0)
  }
  const known = view.spans.flatMap((s) => measured(s.hostId) ?? []).sort((a, b) => a - b)
  const typical = known[Math.floor(known.length / 2)] ?? 2 * LINK
  const rtt = (h: { hostId: string; relay: boolean }) => measured(h.hostId) ?? typical + (h.relay ? RELAY : 0)
  let best: number | undefined
  const visit = (at: number, used: Set<string>, ms: number) => {
    if (at === view.nBlocks) {
      if (best === undefined || ms < best) best = ms
      return
    }
    for (const span of view.spans) {
      if (used.has(span.hostId) || span.blocks[0] > at || span.blocks[1] <= at) continue
      for (let end = at + 1; end <= span.blocks[1]; end++) {
        const compute = span.msPerBlock * (1 + span.activeSessions / span.maxSessions) * (end - at)
        used.add(span.hostId)
        visit(end, used, ms + rtt(span) + compute)
        used.delete(span.hostId)
      }
    }
  }
  visit(0, new Set(), 0)
  return best
}
