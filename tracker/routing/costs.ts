/**
 * What a route costs, in expected ms per decode token: the rules the route planner and placement's
 * route bounds share, so a host is priced the same way whether a session is routed through it or a
 * joining host is weighed against it.
 */
import type { ServedSpan } from './swarm-view'

export interface RouteCosts {
  /** One-way latency assumed for a pair nobody has measured, in ms. */
  defaultLatencyMs: number
  /** Added per hop whose host is relayed: its frames take an extra trip through the tracker, in ms. */
  relayPenaltyMs: number
  /** Hosts with a lower reputation are used only when no other host serves their blocks. */
  minReputation: number
}

export const DEFAULT_ROUTE_COSTS: RouteCosts = { defaultLatencyMs: 40, relayPenaltyMs: 25, minReputation: 0.5 }

/**
 * Per block on a low-reputation host: larger than any real route (hours
 * per token), so the count of such blocks decides before time does.
 */
export const LOW_REPUTATION_PENALTY_MS = 1e7

/**
 * How much slower a decode step runs on a host already serving others. A host declares how many
 * sessions it runs at once (maxSessions); batched decode is memory-bound, so a full host is taken as
 * twice as slow per token as an idle one, growing linearly in between.
 */
export function loadFactor(span: Pick<ServedSpan, 'activeSessions' | 'maxSessions'>): number {
  return 1 + Math.min(1, span.activeSessions / Math.max(1, span.maxSessions))
}

/** Expected ms per decode token for `blocks` blocks on this host at its current load. */
export function hopComputeMs(
  span: Pick<ServedSpan, 'msPerBlock' | 'activeSessions' | 'maxSessions'>,
  blocks: number,
): number {
  return span.msPerBlock * loadFactor(span) * blocks
}

/**
 * What a search charges for one block on this host: its compute, plus the low-reputation penalty. Charged
 * per block, so a low-reputation host serves only the blocks nobody else can. Reported times leave the penalty out.
 */
export function searchStepMs(span: ServedSpan, costs: RouteCosts): number {
  return hopComputeMs(span, 1) + (span.reputation < costs.minReputation ? LOW_REPUTATION_PENALTY_MS : 0)
}

/**
 * What entering a hop on this host adds besides the link to it: through a volunteer relay, the relay's measured round
 * trip to the host (the link to the relay is priced as the link
 * to the host); through the tracker, its constant penalty.
 */
export function relayMs(span: Pick<ServedSpan, 'relay' | 'viaRelay'>, costs: RouteCosts): number {
  if (span.viaRelay !== undefined) return span.viaRelay.relayToHostMs ?? 2 * costs.defaultLatencyMs
  return span.relay ? costs.relayPenaltyMs : 0
}

/** A span a route can use at all: sane numbers, a non-empty range of whole blocks inside the model. */
export function usableSpan(span: ServedSpan, nBlocks: number): boolean {
  const [begin, end] = span.blocks
  return (
    Number.isInteger(begin) &&
    Number.isInteger(end) &&
    begin >= 0 &&
    begin < end &&
    end <= nBlocks &&
    span.msPerBlock > 0 &&
    Number.isFinite(span.msPerBlock)
  )
}

/** Host-id order, so ties break the same way whatever order the registry listed hosts in. */
export function byHostId(a: Pick<ServedSpan, 'hostId'>, b: Pick<ServedSpan, 'hostId'>): number {
  return a.hostId < b.hostId ? -1 : a.hostId > b.hostId ? 1 : 0
}
