import type { z } from 'zod'
import { type ClientToTracker, NeuronError, PLAIN_KV_ARCHS, type Route } from '../../protocol'
import type { Metering } from '../ledger/metering'
import type { ModelCatalog } from '../models/catalog'
import type { SwarmPlanner } from '../routing/swarm-planner'

type Plan = z.output<(typeof ClientToTracker)['route.plan']['request']>

/** Where a session starts from another's cache: that session and the positions copied from it. */
export interface ForkFrom {
  readonly session: string
  readonly position: number
}

/**
 * Prefix affinity (route.plan's `fork`): the hosts of the client's own earlier session, when the new session can start
 * from its cache there. Only a whole-model plan of a new session (not a failover's, not a span's), whose prompt goes on
 * past the shared positions, on hops the tracker routed for that session, issued to the same client; and only while
 * each of those hosts can take the session now (SwarmPlanner.affine: a full or departed host loses the affinity).
 * Undefined otherwise: the caller plans as usual and the prompt is prefilled whole.
 */
export async function affineRoute(
  d: {
    readonly metering: Pick<Metering, 'route'>
    readonly planner: Pick<SwarmPlanner, 'affine'>
    readonly catalog: Pick<ModelCatalog, 'get'>
  },
  request: Plan,
  peer: { readonly nodeId: string },
): Promise<{ route: Route; fork: ForkFrom } | undefined> {
  const fork = request.fork
  if (request.span !== undefined || request.failedHost !== undefined) return undefined
  // a session planned again (its opening found a host full, and it waited): its terms stay what the first plan fixed
  const known = await d.metering.route(request.session)
  const before = known?.routed?.fork
  if (before === undefined)
    return known !== undefined || fork === undefined ? undefined : affine(d, request, fork, peer)
  const found = fork === undefined ? undefined : await affine(d, request, fork, peer)
  if (found?.fork.session !== before.session || found.fork.position !== before.position)
    throw new NeuronError(
      'prefix_gone',
      `session ${request.session} was planned to start from session ${before.session}'s cache, whose hosts ` +
        'cannot take it now; plan a new session without the fork.',
    )
  return found
}

async function affine(
  d: {
    readonly metering: Pick<Metering, 'route'>
    readonly planner: Pick<SwarmPlanner, 'affine'>
    readonly catalog: Pick<ModelCatalog, 'get'>
  },
  request: Plan,
  fork: NonNullable<Plan['fork']>,
  peer: { readonly nodeId: string },
): Promise<{ route: Route; fork: ForkFrom } | undefined> {
  // a family whose cache is not plain per-position K and V keeps no prefix on its hosts
  if (!PLAIN_KV_ARCHS.has(d.catalog.get(request.modelId).manifest.architecture)) return undefined
  if (fork.position >= (request.promptTokens ?? 0) || fork.position >= request.maxTokens) return undefined
  const parent = await d.metering.route(fork.session)
  if (parent === undefined || parent.issuedTo !== peer.nodeId || parent.modelId !== request.modelId) return undefined
  const routed = (hop: (typeof fork.hops)[number]) =>
    parent.hops.some((h) => h.hostId === hop.hostId && h.blocks[0] === hop.blocks[0] && h.blocks[1] === hop.blocks[1])
  if (!fork.hops.every(routed)) return undefined
  const route = d.planner.affine(request.modelId, fork.hops, request.maxTokens, request.exclude)
  return route === undefined ? undefined : { route, fork: { session: fork.session, position: fork.position } }
}
