import { median } from '../../dataplane/link-latency'
import type { RouteHop } from '../../protocol'
import type { HopStats } from './request'

/** Each hop of a finished generation as its summary reports it: its median decode step, and its relay if any. */
export function hopStats(hops: readonly { readonly hop: RouteHop; readonly stepMs: readonly number[] }[]): HopStats[] {
  return hops.map((h) => ({
    hostId: h.hop.hostId,
    blocks: h.hop.blocks,
    medianMs: median(h.stepMs),
    ...(h.hop.via === undefined ? {} : { relayHostId: h.hop.via.relayHostId }),
  }))
}
