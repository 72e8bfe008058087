import type { HopLink } from '../../dataplane/hop-link'
import { median } from '../../dataplane/link-latency'
import { PunchedHopLink } from '../../dataplane/punched-link'
import type { RouteHop } from '../../protocol'
import { directLink } from '../open-hops'
import type { Reach } from './hop-to-hop'
import type { HopStats } from './request'

/** How the client reached a hop: what its link is. */
export function reachedBy(hop: RouteHop, link: HopLink): Reach {
  if (link instanceof PunchedHopLink) return 'punched'
  return directLink(hop) ? 'direct' : 'relayed'
}

/**
 * Each hop of a finished generation as its summary reports it: its median decode step, its relay if any, how the client
 * reached it, and the hidden states it sent the client (none where its seam was forwarded hop to hop).
 */
export function hopStats(
  hops: readonly {
    readonly hop: RouteHop
    readonly stepMs: readonly number[]
    readonly link: HopLink
    readonly hiddenBytesAtOpen?: number | undefined
  }[],
): HopStats[] {
  return hops.map((h) => ({
    hostId: h.hop.hostId,
    blocks: h.hop.blocks,
    medianMs: median(h.stepMs),
    ...(h.hop.via === undefined ? {} : { relayHostId: h.hop.via.relayHostId }),
    reached: reachedBy(h.hop, h.link),
    // a kept link carried earlier sessions' bytes too: this session's are those since its open
    ...(h.link.bytesIn === undefined
      ? {}
      : { hiddenBytesIn: (h.link.bytesIn.get('hidden') ?? 0) - (h.hiddenBytesAtOpen ?? 0) }),
  }))
}
