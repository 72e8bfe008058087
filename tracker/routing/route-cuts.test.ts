import { describe, expect, it } from 'vitest'
import { allowedCuts, NeuronError, type Seam } from '../../protocol'
import { fastestByFullSearch } from '../../test/route-oracle'
import { previewPlacement } from '../placement/placement'
import { planRoute } from './route-planner'
import { CLIENT, LatencyMatrix, NO_LATENCIES, type ServedSpan, type SwarmView } from './swarm-view'

const GB = 1e9

function host(
  hostId: string,
  blocks: readonly [number, number],
  msPerBlock: number,
  more: Partial<ServedSpan> = {},
): ServedSpan {
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

/** A seeded generator, so a failing trial can be rerun. */
function generator(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  }
}

/** Seams of n blocks with each inner cut forbidden at the given odds. */
function seamsWith(n: number, random: () => number, forbidden: number): Seam[] {
  return Array.from({ length: n - 1 }, () => ({
    cut: random() >= forbidden,
    values: 64,
    tokenIds: false,
    int32PerToken: 0,
  }))
}

describe('routes and placements change hosts only where the manifest allows a cut', () => {
  it(
    'plans the fastest route that changes hosts only at allowed cuts, on random swarms, and none when no such ' +
      'route exists',
    () => {
      const random = generator(11)
      let routed = 0
      for (let trial = 0; trial < 300; trial++) {
        const n = 3 + Math.floor(random() * 6)
        const cuts = allowedCuts({ nLayer: n, seams: seamsWith(n, random, 0.4) })
        const spans: ServedSpan[] = []
        const latency = new LatencyMatrix()
        for (let i = 0; i < 5; i++) {
          const begin = Math.floor(random() * n)
          const end = begin + 1 + Math.floor(random() * (n - begin))
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
        const view: SwarmView = { nBlocks: n, spans, latency, cuts }
        const best = fastestByFullSearch(view, cuts)
        if (best === undefined) {
          expect(() => planRoute(view, { tokens: 1 }), `trial ${trial}`).toThrow(NeuronError)
          continue
        }
        routed++
        const route = planRoute(view, { tokens: 1 })
        expect(route.expectedMsPerToken, `trial ${trial}`).toBeCloseTo(best, 9)
        for (const hop of route.hops)
          expect([cuts[hop.blocks[0]], cuts[hop.blocks[1]]], `trial ${trial}: ${hop.hostId} [${hop.blocks}]`).toEqual([
            1, 1,
          ])
        expect(new Set(route.hops.map((h) => h.hostId)).size).toBe(route.hops.length)
      }
      // Enough swarms had a route for the check to mean something.
      expect(routed).toBeGreaterThan(50)
    },
  )

  it(
    'uses part of a host’s range when the range itself ends at a forbidden cut, and says why when hosts cover ' +
      'every block but no route can cut',
    () => {
      // Boundary 2 forbidden: a serves [0, 2) but may hand over only at 1.
      const cuts = allowedCuts({
        nLayer: 4,
        seams: [true, false, true].map((cut) => ({ cut, values: 64, tokenIds: false, int32PerToken: 0 })),
      })
      const route = planRoute(
        { nBlocks: 4, spans: [host('a', [0, 2], 5), host('b', [1, 4], 10)], latency: NO_LATENCIES, cuts },
        { tokens: 1 },
      )
      expect(route.hops.map((h) => [h.hostId, h.blocks])).toEqual([
        ['a', [0, 1]],
        ['b', [1, 4]],
      ])
      const stuck = () =>
        planRoute(
          { nBlocks: 4, spans: [host('a', [0, 2], 5), host('b', [2, 4], 5)], latency: NO_LATENCIES, cuts },
          { tokens: 1 },
        )
      expect(stuck).toThrow(
        /serve every block, but no chain of them changes hosts only where the manifest allows a cut \(not at 2\)/,
      )
      // A failover span must start and end at allowed cuts too.
      const view: SwarmView = { nBlocks: 4, spans: [host('a', [0, 4], 5)], latency: NO_LATENCIES, cuts }
      expect(() => planRoute(view, { tokens: 1, span: [2, 4] })).toThrow(/allows no cut at boundary 2/)
    },
  )

  it(
    'proposes and offers only ranges between allowed cuts, on random swarms; without seams, placement is as ' +
      'before',
    () => {
      const random = generator(5)
      let served = 0
      for (let trial = 0; trial < 150; trial++) {
        const n = 4 + Math.floor(random() * 20)
        const bytesPerBlock = Array.from({ length: n }, () => Math.round((0.5 + 1.5 * random()) * GB))
        const seams = seamsWith(n, random, 0.5)
        const cuts = allowedCuts({ nLayer: n, seams })
        const spans: ServedSpan[] = []
        for (let i = 0, count = Math.floor(random() * 6); i < count; i++) {
          const begin = Math.floor(random() * n)
          spans.push(
            host(`h${i}`, [begin, begin + 1 + Math.floor(random() * (n - begin))], 5 + Math.floor(random() * 30)),
          )
        }
        const model = { nLayer: n, nEmbd: 64, bytesPerBlock, kvBytesPerTokenPerBlock: 1024 }
        const joining = {
          freeMemoryBytes: (1 + 8 * random()) * GB,
          freeDiskBytes: 1e12,
          msPerBlock: 5 + 30 * random(),
          relay: false,
        }
        const view: SwarmView = { nBlocks: n, spans, latency: NO_LATENCIES }
        const preview = previewPlacement(view, { ...model, seams }, joining, { kvBudgetTokens: 8192 })
        const { decision } = preview
        const options = [...(decision.serve ? [decision.proposal] : []), ...preview.alternatives]
        for (const o of options)
          expect([cuts[o.blocks[0]], cuts[o.blocks[1]]], `trial ${trial}: [${o.blocks}]`).toEqual([1, 1])
        if (decision.serve) served++
        // A host refused for memory holds no range between neighbouring allowed cuts.
        if (!decision.serve && decision.code === 'too_little_memory') {
          const [a, e] = decision.details.blocks as [number, number]
          expect(bytesPerBlock.slice(a, e).reduce((s, b) => s + b, 0) + (e - a) * 1024 * 8192).toBeGreaterThan(
            joining.freeMemoryBytes,
          )
        }
        // All cuts allowed is the old behaviour: the same preview as a manifest without seams.
        const allAllowed = seams.map((s) => ({ ...s, cut: true }))
        expect(previewPlacement(view, { ...model, seams: allAllowed }, joining, { kvBudgetTokens: 8192 })).toEqual(
          previewPlacement(view, model, joining, { kvBudgetTokens: 8192 }),
        )
      }
      expect(served).toBeGreaterThan(30)
    },
  )
})
