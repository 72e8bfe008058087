import type { Route } from '../../protocol'
import { planRoute } from '../grant-claim'
import { type HopOpener, openHops } from '../open-hops'
import { ClientRelayed } from './client-relayed'
import { chainOpenings, forwardableLegs, HopToHop, reachOf } from './hop-to-hop'
import { forkedAt, forkGone, type PrefixBook, type PrefixMatch } from './prefix-book'
import type { GenerateRequest } from './request'
import type { StepRunner } from './step-runner'

/**
 * A generation's route: planned by the tracker, opened on every hop, with the way its steps travel (client-relayed, or
 * hop to hop where the hops reach each other). `forkedAt`: the positions the hops start with, copied from the earlier
 * session `fork` names (0 when the tracker routed elsewhere).
 */
export async function openRoute(
  client: HopOpener & { readonly log: (line: string) => void; readonly prefixes?: PrefixBook | undefined },
  request: GenerateRequest,
  plan: Parameters<typeof planRoute>[2],
  maxTokens: number,
  fork: PrefixMatch | undefined,
): Promise<{ route: Route; seamed: GenerateRequest; runner: StepRunner; forkedAt: number }> {
  const session = plan.session
  const route = await planRoute(client.tracker, client.identity, plan, client.log, request.signal)
  // the model's seam precision unless the caller chose one (f32 for mixture-of-experts models)
  const seamed: GenerateRequest = { ...request, hiddenDtype: request.hiddenDtype ?? route.seamDtype ?? 'f16' }
  // hop-to-hop: each seam whose hops reach each other may be forwarded host to host (hop-to-hop.ts); 'auto' turns
  // on those far from the client once its pings say so. A fork's hops keep every input and receipt at the client
  // (client-relayed), as the session it starts from did.
  const mode = fork !== undefined ? 'client-relayed' : (request.forwarding ?? 'auto')
  // hosts behind routers are punched to first, all at once (openHops then finds the channels open): a seam between
  // two hosts the client reaches on channels of its own may be forwarded, the first punching to the second itself
  const punched = await Promise.all(
    route.hops.map((h) => (reachOf(h, false) === 'direct' ? undefined : client.punched?.to(h.hostId))),
  )
  const reach = route.hops.map((h, i) => reachOf(h, punched[i] !== undefined))
  const forwardable = mode === 'client-relayed' ? undefined : forwardableLegs(reach)
  const legs = forwardable?.some((d) => d) === true ? forwardable : undefined
  const forwarding = legs === undefined ? undefined : chainOpenings(route.hops, legs)
  // the punches were waited for just now: what did not open by then takes its relay at once
  const hops = await openHops(client, route.hops, session, seamed, maxTokens, true, forwarding, 0).catch(
    (error: unknown) => forkGone(error, client.prefixes, fork),
  )
  const runner: StepRunner =
    legs === undefined
      ? new ClientRelayed(hops, session, client.identity)
      : mode === 'hop-to-hop'
        ? new HopToHop(hops, session, client.identity, legs)
        : // 'auto': every seam through the client until the first step's pings say which are far (farLegs)
          new HopToHop(
            hops,
            session,
            client.identity,
            legs.map(() => false),
            legs,
          )
  return { route, seamed, runner, forkedAt: forkedAt(fork, route.hops, hops) }
}
