import type { z } from 'zod'
import type { ClientToTracker, RpcResponse } from '../../protocol'
import type { RoutePlanDeps, RoutePlanPeer } from './route-plan'

type TurnRequest = z.output<(typeof ClientToTracker)['route.turn']['request']>

/**
 * route.turn: a conversation's next turn on a session still open on its hops. The turn is recorded with the session's
 * route (metering counts its first step's tokens as prompt, at its position), and each hop gets a ticket naming it, on
 * the session's terms and hold: the positions stay within its maxTokens, which the hold already covers.
 */
export async function routeTurn(
  d: Pick<RoutePlanDeps, 'tickets' | 'catalog' | 'metering'>,
  request: TurnRequest,
  peer: RoutePlanPeer,
): Promise<RpcResponse<typeof ClientToTracker, 'route.turn'>> {
  const payer = await d.tickets.payer(request.session, peer.publicKey, peer.socket.handshake.address)
  // checked and recorded first (the caller's session, its hops, the turn in order and within its positions), then
  // the hold (still the payer's) and the tickets
  const routed = await d.metering.addTurn(request.session, peer.nodeId, request.turn, request.hops)
  const modelId = (await d.metering.route(request.session))?.modelId ?? ''
  const tickets = await d.tickets.turnTickets(
    request.hops,
    { session: request.session, ...routed },
    request.turn,
    d.catalog.get(modelId).manifest,
    peer.publicKey,
    payer,
  )
  return { tickets }
}
