import type { z } from 'zod'
import { type ClientToTracker, type RpcResponse, seamAt, seamDtype } from '../../protocol'
import type { AuditedBy } from '../checks/auditor'
import type { HostChecks } from '../checks/host-checks'
import type { HostRegistry } from '../hosts/registry'
import type { Metering } from '../ledger/metering'
import type { ModelCatalog } from '../models/catalog'
import type { Reputation } from '../reputation/reputation'
import { measureTargets } from '../routing/latency-reports'
import { clientLatencyId, type MeasuredLatencies } from '../routing/measured-latencies'
import { describeRoute } from '../routing/route-planner'
import type { SwarmPlanner } from '../routing/swarm-planner'
import { affineRoute } from './prefix-affinity'
import type { TicketOffice } from './ticket-office'

export interface RoutePlanDeps {
  readonly tickets: TicketOffice
  readonly planner: SwarmPlanner
  readonly catalog: ModelCatalog
  readonly metering: Metering
  readonly reputation: Reputation
  readonly checks: HostChecks
  readonly latencies: MeasuredLatencies
  readonly registry: HostRegistry
  /**
   * Who may re-run a hop's blocks (Auditor.auditedBy): a hop nobody can re-run is marked unaudited; twins named stand
   * by, paid a share of each of the hop's steps (tracker/ledger/standby.ts).
   */
  readonly auditedBy: (modelId: string, blocks: readonly [number, number], hostId: string) => AuditedBy | undefined
  /** Logs each planned route (`--log-routes`), or nothing. */
  readonly logRoute?: (line: string) => void
}

/** Who asks for a route: the client's node, its key, and the address the tracker sees it at. */
export interface RoutePlanPeer {
  readonly nodeId: string
  readonly publicKey: string
  readonly socket: { readonly handshake: { readonly address: string } }
}

type Plan = z.output<(typeof ClientToTracker)['route.plan']['request']>

/**
 * route.plan: the payer's account (or a grant refusal), a route, a credit hold and a ticket per hop. A failover plan
 * (`failedHost`) gets failover tickets (replays allowed, the failed host's escrow paying first), and so do the hops
 * already on the route it asks to `rebuild`.
 */
export async function planRoute(
  d: RoutePlanDeps,
  request: Plan,
  peer: RoutePlanPeer,
): Promise<RpcResponse<typeof ClientToTracker, 'route.plan'>> {
  const payer = await d.tickets.payer(request.session, peer.publicKey, peer.socket.handshake.address)
  // prefix affinity: the hosts that hold the client's earlier session, when they can take this one (its prompt's
  // shared positions are copied there, and only the rest is prefilled and paid)
  const affine = await affineRoute(d, request, peer)
  const route =
    affine?.route ?? d.planner.route({ ...request, relayedBy: clientLatencyId(peer.nodeId), clientKey: peer.publicKey })
  // the fork the tickets and the metering take is the tracker's finding, never the client's say-so
  const forked =
    affine === undefined
      ? { fork: undefined }
      : { fork: affine.fork, promptTokens: Math.max(0, (request.promptTokens ?? 0) - affine.fork.position) }
  const manifest = d.catalog.get(request.modelId).manifest
  // the hops issued before this plan: what a rebuild may name
  const before = request.rebuild === undefined ? undefined : ((await d.metering.route(request.session))?.hops ?? [])
  const failedHost = request.failedHost
  // a failover within a conversation's turn: the replacements take the turn's first step (its prompt) again
  const turn = failedHost === undefined ? undefined : (await d.metering.routed(request.session))?.turns?.at(-1)
  const ticketed = await d.tickets.ticket(route, { ...request, ...forked, turn }, manifest, peer.publicKey, payer)
  const rebuildTickets =
    request.rebuild === undefined || failedHost === undefined
      ? undefined
      : d.tickets.rebuildTickets(
          request.rebuild,
          before ?? [],
          { ...request, failedHost, turn },
          manifest,
          peer.publicKey,
          payer,
        )
  const audits = route.hops.map((h) => d.auditedBy(request.modelId, h.blocks, h.hostId))
  const issued = route.hops.map((h, i) => {
    const audit = audits[i]
    return {
      hostId: h.hostId,
      blocks: h.blocks,
      ...(h.via === undefined ? {} : { relayId: h.via.relayHostId }),
      ...(audit?.by === 'twins' ? { standby: [...audit.twins] } : {}),
    }
  })
  const failed = await d.metering.issue(request.session, request.modelId, issued, peer.nodeId, Date.now(), {
    ...request,
    ...forked,
    clientKey: peer.publicKey,
    accountId: payer.account.accountId,
  })
  d.planner.countRouted(request.session, route, peer.publicKey)
  d.logRoute?.(`route ${request.session.slice(0, 8)} for ${peer.nodeId}: ${describeRoute(route)}`)
  // A span asked again after a failure: the client's word, no evidence; the host is probed (one claim per key).
  if (failed && failedHost !== undefined) d.reputation.failoverClaimed(failedHost, peer.publicKey)
  const seamOut = (b: number) => (b < manifest.nLayer ? { seamOut: seamAt(manifest, b) } : {})
  return {
    ...ticketed,
    hops: ticketed.hops.map((h, i) => {
      const audit = audits[i]
      return {
        ...h,
        audit: d.checks.auditRate(h.hostId, peer.nodeId),
        ...seamOut(h.blocks[1]),
        ...(audit === undefined ? { unaudited: true as const } : { auditedBy: audit.by }),
        ...(audit?.by === 'twins' ? { standby: audit.twins.length } : {}),
      }
    }),
    seamDtype: seamDtype(manifest),
    ...measureTargets(d.latencies, d.registry, peer.nodeId, route, (id) => d.planner.behindVolunteerRelay(id)),
    ...(rebuildTickets === undefined ? {} : { rebuildTickets }),
  }
}
