/** The tracker's side of measured latencies: what a client reports, and which hosts a route asks it to measure. */
import type { LatencyReport, Route } from '../../protocol'
import type { HostRegistry } from '../hosts/registry'
import type { MeasuredLatencies } from './measured-latencies'

/**
 * Hosts one route asks its client to ping besides its own hops:
 * enough to notice a recovered host, few enough to cost nothing.
 */
const MEASURE_PER_ROUTE = 4

/**
 * Records a client's report under its own node id; links to hosts
 * the registry does not know are dropped. Returns the links kept.
 */
export function recordLatencyReport(
  latencies: MeasuredLatencies,
  registry: HostRegistry,
  reporter: string,
  report: LatencyReport,
): number {
  let recorded = 0
  for (const link of report.links) {
    if (registry.get(link.hostId) === undefined) continue
    latencies.record(reporter, link.hostId, link.roundTripMs)
    recorded++
  }
  return recorded
}

/**
 * Ready hosts of the model with a direct endpoint that `reporter` has not measured lately and the route does
 * not use (its hops are measured anyway): without this, a host routed around once would never be measured
 * again, and never used again after it recovered.
 */
export function measureTargets(
  latencies: MeasuredLatencies,
  registry: HostRegistry,
  reporter: string,
  route: Route,
): NonNullable<Route['measure']> {
  const onRoute = new Set(route.hops.map((h) => h.hostId))
  const endpoints = new Map<string, { hostId: string; endpoint: string; fingerprint?: string }>()
  for (const h of registry.serving(route.modelId)) {
    const { endpoint, tls, status } = h.state
    if (status === 'ready' && endpoint !== null && !onRoute.has(h.hostId))
      endpoints.set(h.hostId, {
        hostId: h.hostId,
        endpoint,
        ...(tls === undefined ? {} : { fingerprint: tls.fingerprint }),
      })
  }
  return latencies
    .staleFor(reporter, endpoints.keys(), MEASURE_PER_ROUTE)
    .map((hostId) => endpoints.get(hostId) as { hostId: string; endpoint: string })
}
