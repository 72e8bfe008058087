import { verifyTicket } from '../../identity/tickets'
import { MAX_PROBE_TOKENS, NeuronError, type OpenSession, type Ticket } from '../../protocol'

/**
 * Sessions a host keeps free for its tracker's probes, past its session limit: a full host still
 * answers them, so being busy never excuses a refused probe. Each holds MAX_PROBE_TOKENS at most.
 */
export const PROBE_SLOTS = 2

/** What a host lets its sessions reserve: each bounded before its KV cache is allocated. */
export interface AdmissionLimits {
  readonly maxSessions: number
  /** KV capacity one session may reserve, tokens (what the host advertises to the tracker). */
  readonly maxSessionTokens: number
  /** KV tokens all open sessions may reserve together. */
  readonly kvBudgetTokens: number
  /** Sessions one client key may hold at once: no one key takes every slot. */
  readonly maxSessionsPerClient: number
}

/** What an open session holds, as admission counts it. */
export interface AdmittedSession {
  readonly clientKey: string
  readonly open: Pick<OpenSession, 'maxTokens'>
  /** Held in a probe slot (its ticket says probe): counted against the probe slots only. */
  readonly probe: boolean
}

export interface TicketTerms {
  /** undefined until the tracker has said its key (in the host.hello ack). */
  readonly trackerKey: () => string | undefined
  readonly hostId: string
  readonly modelId: string
  readonly manifestSha256: string
}

/**
 * The open's ticket is its tracker's, for this host, session, blocks and size, and the open is signed by the ticket's
 * client (an open of a new session, or a conversation's turn on an open one: renew.ts).
 */
export function verifyOpen(
  session: string,
  request: Pick<OpenSession, 'blocks' | 'maxTokens'>,
  ticket: Ticket,
  signature: string,
  terms: Pick<TicketTerms, 'trackerKey' | 'hostId'>,
): void {
  const trackerKey = terms.trackerKey()
  if (trackerKey === undefined)
    throw new NeuronError('no_tracker', "this host has not yet learned its tracker's key; try again in a moment.")
  verifyTicket(ticket, {
    trackerKey,
    session,
    hostId: terms.hostId,
    openSignature: signature,
    blocks: request.blocks,
    maxTokens: request.maxTokens,
  })
}

/** Defaults from the session count and per-session capacity: one key may hold all but one slot. */
export function admissionLimits(maxSessions: number, given: Partial<AdmissionLimits> = {}): AdmissionLimits {
  const maxSessionTokens = given.maxSessionTokens ?? 4096
  return {
    maxSessions,
    maxSessionTokens,
    kvBudgetTokens: given.kvBudgetTokens ?? maxSessions * maxSessionTokens,
    maxSessionsPerClient: given.maxSessionsPerClient ?? Math.max(1, maxSessions - 1),
  }
}

/**
 * Admits an open, or throws a typed error saying why not: it must carry its tracker's ticket for
 * this host, model and blocks, opened by the ticket's client, and fit this host's limits (a probe's
 * ticket, the probe slots'). Returns the ticket: the session is bound to its client key and its
 * receipts name its price and tracker.
 */
export function admit(
  session: string,
  request: OpenSession,
  terms: TicketTerms,
  limits: AdmissionLimits,
  open: Iterable<AdmittedSession>,
): Ticket {
  const { ticket, signature } = request
  if (ticket === undefined || signature === undefined)
    throw new NeuronError(
      'no_ticket',
      "this host serves only ticketed sessions; ask the tracker for a route (route.plan) and open with each hop's " +
        'ticket.',
    )
  verifyOpen(session, request, ticket, signature, terms)
  if (ticket.modelId !== terms.modelId || ticket.manifestSha256 !== terms.manifestSha256)
    throw new NeuronError(
      'wrong_model',
      `the ticket is for ${ticket.modelId} (manifest ${ticket.manifestSha256.slice(0, 12)}…); this host serves ` +
        `${terms.modelId} (${terms.manifestSha256.slice(0, 12)}…).`,
    )
  if (ticket.probe === true) {
    admitProbe(request, open)
    return ticket
  }
  if (request.maxTokens > limits.maxSessionTokens)
    throw new NeuronError(
      'too_many_tokens',
      `a session here holds at most ${limits.maxSessionTokens} tokens; ${request.maxTokens} asked. Ask the tracker ` +
        `for a route with fewer tokens.`,
      { maxSessionTokens: limits.maxSessionTokens, requested: request.maxTokens },
    )
  let reserved = 0
  let ofClient = 0
  let sessions = 0
  for (const s of open) {
    if (s.probe) continue
    sessions++
    reserved += s.open.maxTokens
    if (s.clientKey === ticket.clientKey) ofClient++
  }
  if (ofClient >= limits.maxSessionsPerClient)
    throw new NeuronError(
      'too_many_sessions',
      `this client already holds ${ofClient} sessions here, the most one key may; close one first.`,
      {
        maxSessionsPerClient: limits.maxSessionsPerClient,
      },
    )
  if (reserved + request.maxTokens > limits.kvBudgetTokens)
    throw new NeuronError(
      'kv_budget_full',
      `this host's KV cache has ${limits.kvBudgetTokens - reserved} of ${limits.kvBudgetTokens} tokens free; ` +
        `${request.maxTokens} asked. Ask the tracker for another route.`,
      { freeTokens: limits.kvBudgetTokens - reserved },
    )
  if (sessions >= limits.maxSessions)
    throw new NeuronError(
      'busy',
      `this host runs its maximum of ${limits.maxSessions} sessions; ask the tracker for another route.`,
    )
  return ticket
}

/**
 * How long a session must have gone unstepped before a full host gives it up to a key holding fewer, or, opened and
 * never stepped, to any waiting key (squattedSession).
 */
export const EVICT_IDLE_MS = 5_000

/** Refusals a full host may answer by giving up a squatted session instead (the key's own, for its own bound). */
const FULL = new Set(['busy', 'kv_budget_full', 'too_many_sessions'])

/**
 * The session a full host closes for an open by `opener` that it would otherwise refuse as full. First the oldest
 * session opened and never stepped for EVICT_IDLE_MS, whoever holds it: an honest client steps right after its open,
 * so such a session holds a slot for nothing (one key or many). Then the least recently used session stepped and idle
 * EVICT_IDLE_MS at least: a conversation between its turns (its cache kept for the next, client/generation/
 * conversation.ts) or a client gone; a kept cache is a cache, given up under pressure, and the conversation starts its
 * next turn anew. Among those, the key holding the most sessions here gives first, so keys converge on equal shares.
 * Undefined when none is idle: the opener is refused as before.
 */
export function squattedSession(
  refusal: unknown,
  opener: string,
  open: Iterable<
    [
      string,
      AdmittedSession & {
        readonly lastUsed: number
        readonly stepped: boolean
        /** Its steps: one in flight (a long prefill) is not idle. */
        readonly steps?: { readonly busy: boolean }
      },
    ]
  >,
  now: number,
  idleMs = EVICT_IDLE_MS,
): string | undefined {
  if (!(refusal instanceof NeuronError) || !FULL.has(refusal.code)) return undefined
  const byKey = new Map<string, number>()
  let unstepped: [string, number] | undefined
  const idle: [string, number, string][] = []
  for (const [id, s] of open) {
    if (s.probe) continue
    byKey.set(s.clientKey, (byKey.get(s.clientKey) ?? 0) + 1)
    if (now - s.lastUsed < idleMs || s.steps?.busy === true) continue
    // past its own bound, a key gives up one of its own sessions: another key's would not make room for it
    if (refusal.code === 'too_many_sessions' && s.clientKey !== opener) continue
    if (!s.stepped && (unstepped === undefined || s.lastUsed < unstepped[1])) unstepped = [id, s.lastUsed]
    if (s.stepped) idle.push([id, s.lastUsed, s.clientKey])
  }
  if (unstepped !== undefined) return unstepped[0]
  const held = (key: string) => (key === opener ? (byKey.get(key) ?? 0) + 1 : (byKey.get(key) ?? 0))
  idle.sort((x, y) => held(y[2]) - held(x[2]) || x[1] - y[1])
  return idle[0]?.[0]
}

/**
 * A tracker's probe fits a probe slot: a probe's tokens at
 * most, PROBE_SLOTS at once (of any load the host has besides).
 */
function admitProbe(request: OpenSession, open: Iterable<AdmittedSession>): void {
  if (request.maxTokens > MAX_PROBE_TOKENS)
    throw new NeuronError(
      'too_many_tokens',
      `a probe holds at most ${MAX_PROBE_TOKENS} tokens; ${request.maxTokens} asked.`,
      {
        maxProbeTokens: MAX_PROBE_TOKENS,
        requested: request.maxTokens,
      },
    )
  let probes = 0
  for (const s of open) if (s.probe) probes++
  if (probes >= PROBE_SLOTS)
    throw new NeuronError(
      'probe_slots_full',
      `this host is answering ${probes} probes, all its probe slots; probe it again once one has closed.`,
      {
        probeSlots: PROBE_SLOTS,
      },
    )
}
