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
 * Ready hosts of the model that `reporter` has not measured lately and the route does not use (its hops are measured
 * anyway): without this, a host routed around once would never be measured again, and never used again after it
 * recovered. Those with a direct endpoint are pinged there (`measure`); those behind the tracker's relay through it, by
 * ping frame (`measureRelayed`), so a relayed host is priced by what its path costs. A host behind a volunteer relay
 * is priced by the client's round trip to the relay and the relay's to the host, and measured on routes through it.
 */
export function measureTargets(
  latencies: MeasuredLatencies,
  registry: HostRegistry,
  reporter: string,
  route: Route,
  behindVolunteer: (hostId: string) => boolean = () => false,
): Pick<Route, 'measure' | 'measureRelayed'> {
  const onRoute = new Set(route.hops.map((h) => h.hostId))
  const endpoints = new Map<string, { hostId: string; endpoint: string; fingerprint?: string } | null>()
  for (const h of registry.serving(route.modelId)) {
    const { endpoint, tls, status } = h.state
    if (status !== 'ready' || onRoute.has(h.hostId)) continue
    if (endpoint !== null)
      endpoints.set(h.hostId, {
        hostId: h.hostId,
        endpoint,
        ...(tls === undefined ? {} : { fingerprint: tls.fingerprint }),
      })
    else if (!behindVolunteer(h.hostId)) endpoints.set(h.hostId, null)
  }
  const stale = latencies.staleFor(reporter, endpoints.keys(), MEASURE_PER_ROUTE)
  const measure = stale.flatMap((hostId) => endpoints.get(hostId) ?? [])
  const measureRelayed = stale.filter((hostId) => endpoints.get(hostId) === null)
  return { measure, ...(measureRelayed.length === 0 ? {} : { measureRelayed }) }
}
