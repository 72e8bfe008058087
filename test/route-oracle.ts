// Test helper: the slowest correct route planner, to check the real one against on random swarms.
import { DEFAULT_ROUTE_COSTS } from '../tracker/routing/costs'
import { CLIENT, type SwarmView } from '../tracker/routing/swarm-view'

/**
 * The fastest route over distinct hosts by trying every one: each hop is a sub-range of its host's span,
 * ending where `cuts` allows (every boundary when absent). Undefined when no route covers the blocks.
 */
export function fastestByFullSearch(view: SwarmView, cuts?: Uint8Array): number | undefined {
  const { defaultLatencyMs, relayPenaltyMs } = DEFAULT_ROUTE_COSTS
  let best: number | undefined
  const linkMs = (from: string, to: string) => view.latency.ms(from, to) ?? defaultLatencyMs
  // a relayed host's link, measured, was measured through its relay: the penalty is for a link nobody measured
  const relayMs = (from: string, span: { hostId: string; relay: boolean }) =>
    span.relay && view.latency.ms(from, span.hostId) === undefined ? relayPenaltyMs : 0
  const visit = (at: number, sender: string, used: Set<string>, ms: number) => {
    if (at === view.nBlocks) {
      const total = ms + linkMs(sender, CLIENT)
      if (best === undefined || total < best) best = total
      return
    }
    for (const span of view.spans) {
      if (used.has(span.hostId) || span.blocks[0] > at || span.blocks[1] <= at) continue
      for (let end = at + 1; end <= span.blocks[1]; end++) {
        if (cuts !== undefined && cuts[end] === 0) continue
        const compute = span.msPerBlock * (1 + span.activeSessions / span.maxSessions) * (end - at)
        used.add(span.hostId)
        visit(end, span.hostId, used, ms + linkMs(sender, span.hostId) + compute + relayMs(sender, span))
        used.delete(span.hostId)
      }
    }
  }
  visit(0, CLIENT, new Set(), 0)
  return best
}
