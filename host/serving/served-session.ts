import type { KeyObject } from 'node:crypto'
import type { OpenSession, Ticket } from '../../protocol'
import { MAX_HEARTBEAT_SESSIONS } from '../../protocol'
import type { SerialQueue } from '../serial-queue'
import type { LastHopSampler } from './last-hop-sampler'
import type { ServingSession } from './serving-runtime'
import type { StepOrder } from './step/step-order'

/**
 * Who sent a frame: `ws:<n>` for the n-th WebSocket connection, `relay:<public key>` for frames the
 * tracker relays for the client it authenticated. A session answers only the caller that opened it.
 */
export type FrameCaller = string

/** A session a shard server holds. */
export interface ServedSession {
  readonly runtime: ServingSession
  readonly open: OpenSession
  /** The caller that opened it: the only one that may step or close it (the same open again moves it: renew.ts). */
  owner: FrameCaller
  /** The ticket's client key: it counts against that key's session limit, and signs every step. */
  readonly clientKey: string
  /** The same key parsed once: every step's signature is checked against it. */
  readonly clientKeyObject: KeyObject
  /** Steps come in order (step-order.ts). */
  readonly order: StepOrder
  /** The tracker's probe, in a probe slot: not one of the host's sessions (see PROBE_SLOTS). */
  readonly probe: boolean
  /** What the session's receipts name: its model, price and tracker; a conversation's turn replaces it (renew.ts). */
  ticket: Ticket
  /** False until its first forward: an open never stepped is reaped early. */
  stepped: boolean
  /** The last hop's sampling; a conversation's turn may bring its own (renew.ts). */
  sampling: LastHopSampler
  lastUsed: number
  /** Steps of one session run one after another. */
  readonly steps: SerialQueue
  /**
   * The latest step's sealed answer, answered again to a retry of that step with the same input instead of a second
   * pass (step/kept-answer.ts; undefined past KEPT_ANSWER_BYTES: such a retry gets one second pass, `recomputed`).
   */
  kept?: {
    readonly step: number
    /** The sha256 of the input it was served with, as the client signed it. */
    readonly input: string
    readonly answer: Uint8Array | undefined
    recomputed: boolean
  }
}

/**
 * The ticketed sessions a host has held since its last heartbeat: the heartbeat lists them, and the tracker stops
 * counting a session it routed here once a heartbeat lists it (its count then holds it, or it has closed). A count
 * computed before an open, arriving after the route, no longer drops the routed session from the tracker's count.
 */
export class SessionsSeen {
  private ids = new Set<string>()
  private overflowed = false

  opened(id: string): void {
    if (this.ids.size < MAX_HEARTBEAT_SESSIONS) this.ids.add(id)
    else this.overflowed = true
  }

  /**
   * What to list: `open` and those opened since the last take; undefined past MAX_HEARTBEAT_SESSIONS. Starts afresh.
   */
  take(open: Iterable<string>): string[] | undefined {
    for (const id of open) this.opened(id)
    const listed = this.overflowed ? undefined : [...this.ids]
    this.ids = new Set()
    this.overflowed = false
    return listed
  }
}

/** A session's per-block decode time assumed before the host has measured its own (ms per token per block). */
const UNMEASURED_MS_PER_BLOCK = 5
/** The most an open's wait for its prompt from upstream extends the unstepped bound (the stepped idle bound). */
const MAX_UPSTREAM_WAIT_MS = 10 * 60_000

/**
 * How long a session's first step may take to reach this host after its open, beyond the unstepped bound: a hop
 * after the first waits while the hops before it prefill the prompt (the route opens every hop first), which on slow
 * hosts and long prompts takes longer than the bound itself (a 2 600-token prompt through 14 of 22 blocks of a 1.1B
 * model on one CPU thread a host: ~40 s). Bounded by the ticket's prompt (what the payer's credit hold covers) times
 * the blocks before this one, at this host's own decode time per block (a prompt's rows cost less each: a margin for
 * slower hosts upstream), and at most MAX_UPSTREAM_WAIT_MS. Only the reaping of idle opens takes it: a full host
 * still gives an open unstepped for EVICT_IDLE_MS to a waiting key (admission's squattedSession).
 */
export function upstreamWaitMs(
  ticket: { readonly promptTokens: number; readonly blocks: readonly [number, number] },
  msPerBlock: number | undefined,
): number {
  const perBlock = msPerBlock !== undefined && Number.isFinite(msPerBlock) ? msPerBlock : UNMEASURED_MS_PER_BLOCK
  return Math.min(MAX_UPSTREAM_WAIT_MS, Math.max(0, ticket.promptTokens * ticket.blocks[0] * perBlock))
}
