// Opening a route's hops: a WebSocket to each host (or a volunteer relay's circuit, or the tracker's relay), then
// the session's open with its ticket, signed by the client's key; and closing them when the session ends.

import { expectOk } from '../dataplane/hop-frames'
import { HopFailure, type HopLink, RelayHopLink, WebSocketHopLink } from '../dataplane/hop-link'
import { type IdleLinks, keptLinkPingBound, linkKey } from '../dataplane/idle-links'
import { PunchedHopLink } from '../dataplane/punched-link'
import type { PunchedPaths } from '../dataplane/punched-paths'
import type { TrustedCa } from '../dataplane/tls-trust'
import type { TrackerChannel } from '../dataplane/tracker-link'
import type { NodeIdentity } from '../identity/keys'
import { signOpen } from '../identity/tickets'
import { type ForwardingOpen, jsonFrame, NeuronError, type Route, type Ticket } from '../protocol'
import type { GenerateRequest } from './generation/request'
import type { AuditableHop } from './step-audits'

/** Inputs sent to one hop so far, kept so a replacement can rebuild its KV cache by replay (and for audits). */
export interface HopState extends AuditableHop {
  link: HopLink
  stepMs: number[]
  /** Hidden-state bytes the link had carried when the session opened (a kept link carried earlier sessions'). */
  hiddenBytesAtOpen?: number
  /** The ping sent after the open, settled once its round trip is in roundTripsMs or given up. */
  pinged?: Promise<void> | undefined
}

/** What opening hops needs of a client. */
export interface HopOpener {
  readonly identity: NodeIdentity
  readonly ca: TrustedCa | undefined
  readonly tracker: TrackerChannel
  /** Channels punched to hosts that accept no connections, tried before their relay (absent: relays only). */
  readonly punched?: PunchedPaths | undefined
  /** Direct links of ended sessions, kept for the next session to the same host (absent: each session connects). */
  readonly idleLinks?: IdleLinks | undefined
}

/**
 * Opens the session on each hop, every hop at once (a route's opening costs one hop's handshakes and open, not the sum
 * of them: between homes each is several round trips); the last one samples when `endsRoute`. When one fails, waits
 * for the others and closes the ones that opened, and throws the failure of the first hop in route order.
 */
export async function openHops(
  client: HopOpener,
  route: Route['hops'],
  session: string,
  request: GenerateRequest,
  maxTokens: number,
  endsRoute: boolean,
  /** Hop-to-hop forwarding, per hop (generation/hop-to-hop.ts's chainOpenings); absent: client-relayed. */
  forwarding?: readonly (ForwardingOpen | undefined)[],
  /** How long to wait for a punch to each host (0: punched just before, take what opened; default PUNCH_WAIT_MS). */
  punchWaitMs?: number,
): Promise<HopState[]> {
  const states: (HopState | undefined)[] = route.map(() => undefined)
  const openOne = async (hop: Route['hops'][number], i: number) => {
    const ticket = hop.ticket
    if (ticket === undefined)
      throw new NeuronError('no_ticket', `the tracker gave no ticket for host ${hop.hostId}; ask it for a route again.`)
    const kept = directLink(hop) ? client.idleLinks?.take(linkKey(hop.endpoint as string, hop.fingerprint)) : undefined
    const sampling = endsRoute && i === route.length - 1 ? (request.sampling ?? {}) : undefined
    const open = async (link: HopLink) => {
      const state: HopState = {
        hop,
        link,
        inputs: [],
        receipts: [],
        sketches: [],
        lastOutput: undefined,
        stepMs: [],
        hiddenBytesAtOpen: link.bytesIn?.get('hidden') ?? 0,
        ...(sampling === undefined ? {} : { sampling }),
      }
      states[i] = state
      await expectOk(
        await link.request(
          jsonFrame('open', session, 0, {
            modelId: request.modelId,
            blocks: hop.blocks,
            maxTokens,
            ticket,
            signature: signOpen(client.identity, ticket, { blocks: hop.blocks, maxTokens }),
            hiddenDtype: request.hiddenDtype ?? 'f16',
            ...(forwarding?.[i] === undefined ? {} : { forwarding: forwarding[i] }),
            ...(sampling === undefined ? {} : { sampling }),
          }),
        ),
      )
      // a second ping with the host idle again: the first met it busy connecting or opening (farLegs takes the fastest)
      state.pinged = link.measure?.()
    }
    if (kept === undefined) return open(await linkTo(client, hop, punchWaitMs))
    try {
      const opening = open(kept)
      // given up for silence, the link is closed under it: that rejection has nobody to hear it
      opening.catch(() => {})
      await Promise.race([opening, silent(kept, hop.hostId)])
    } catch (error) {
      // a kept link whose path went quiet while it waited: a fresh connection, once (the open, where it got there,
      // moves over: the host takes the same open again from a later connection)
      if (!(error instanceof HopFailure && error.code === 'hop_unreachable')) throw error
      kept.close()
      await open(await linkTo(client, hop, punchWaitMs))
    }
  }
  const outcomes = await Promise.allSettled(route.map((hop, i) => openOne(hop, i)))
  const opened = states.filter((s) => s !== undefined)
  const failed = outcomes.find((o) => o.status === 'rejected')
  if (failed !== undefined) {
    await closeHops(opened, session)
    throw failed.reason
  }
  return opened
}

/**
 * Rejects with hop_unreachable when the kept link's host does not answer a ping in time (a router dropped the
 * connection without a word: the link's own watch would take LINK_SILENCE_MS to say so); else never settles.
 */
async function silent(kept: WebSocketHopLink, hostId: string): Promise<never> {
  const bound = keptLinkPingBound(kept)
  if (!(await kept.answers(bound)))
    throw new HopFailure(hostId, 'hop_unreachable', `host ${hostId} did not answer a ping within ${bound} ms`)
  return new Promise<never>(() => {})
}

/** Whether the client connects to the hop itself: the host takes connections, and no volunteer relay stands between. */
export function directLink(hop: Route['hops'][number]): boolean {
  return hop.endpoint !== null && hop.via === undefined
}

/** A link to the hop: direct where the host takes connections; else punched through the routers; else its relay. */
async function linkTo(
  client: HopOpener,
  hop: Route['hops'][number],
  punchWaitMs: number | undefined,
): Promise<HopLink> {
  const punched = directLink(hop) ? undefined : await client.punched?.to(hop.hostId, punchWaitMs)
  if (punched !== undefined) return new PunchedHopLink(punched)
  if (hop.via !== undefined)
    // a volunteer relay's circuit to the host, pinned to the relay's certificate
    return WebSocketHopLink.connect(hop.hostId, hop.via.endpoint, {
      ca: client.ca,
      fingerprint: hop.via.fingerprint,
      throughRelay: true,
    })
  if (hop.endpoint === null) return new RelayHopLink(hop.hostId, client.tracker)
  return WebSocketHopLink.connect(hop.hostId, hop.endpoint, { ca: client.ca, fingerprint: hop.fingerprint })
}

/**
 * A conversation's next turn on hops that hold the session: each takes its turn ticket (route.turn) as the open
 * session's, over the connection that opened it.
 */
export async function renewHops(
  client: HopOpener,
  hops: readonly HopState[],
  session: string,
  request: GenerateRequest,
  maxTokens: number,
  tickets: readonly Ticket[],
): Promise<void> {
  await Promise.all(
    hops.map(async (h, i) => {
      const ticket = tickets[i]
      if (ticket === undefined || ticket.hostId !== h.hop.hostId)
        throw new NeuronError('no_ticket', `the tracker gave no turn ticket for host ${h.hop.hostId}; start anew.`)
      const blocks = h.hop.blocks
      // the last hop samples the turn with its own sampling, as a new session would
      const sampling = i === hops.length - 1 ? (request.sampling ?? {}) : undefined
      if (sampling !== undefined) h.sampling = sampling
      await expectOk(
        await h.link.request(
          jsonFrame('open', session, 0, {
            modelId: request.modelId,
            blocks,
            maxTokens,
            ticket,
            signature: signOpen(client.identity, ticket, { blocks, maxTokens }),
            hiddenDtype: request.hiddenDtype ?? 'f16',
            ...(sampling === undefined ? {} : { sampling }),
          }),
        ),
      )
    }),
  )
}

/**
 * Closes the session on every hop (a hop that is gone has nothing left to close) and hangs up; with `keep`, a direct
 * link whose host acknowledged the close is kept there for this client's next session to that host instead.
 */
export async function closeHops(hops: readonly HopState[], session: string, keep?: IdleLinks): Promise<void> {
  await Promise.all(
    hops.map(async (h) => {
      const closed = await h.link.request(jsonFrame('close', session, 0xfffffffe, {})).then(
        (answer) => answer.kind === 'ok',
        () => false,
      )
      if (closed && keep !== undefined && h.link instanceof WebSocketHopLink && directLink(h.hop))
        keep.park(linkKey(h.hop.endpoint as string, h.hop.fingerprint), h.link)
      else h.link.close()
    }),
  )
}
