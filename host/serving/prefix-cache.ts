import { NeuronError, type OpenSession, type Ticket } from '../../protocol'
import type { ServedSession } from './served-session'
import type { ServingSession } from './serving-runtime'

/** How long a closed session's cache is kept for a session of the same key to start from. */
export const PREFIX_KEEP_MS = 5 * 60_000
/** Closed sessions' caches kept at once (each within the host's KV budget, given up first under pressure). */
export const MAX_KEPT_PREFIXES = 16

/** A closed session's cache, kept. */
interface Kept {
  readonly runtime: ServingSession
  readonly clientKey: string
  readonly blocks: readonly [number, number]
  /** The positions it holds. */
  readonly positions: number
  /** KV tokens it reserves (its session's maxTokens). */
  readonly tokens: number
  keptAt: number
}

/**
 * A host's prefix cache: the caches of sessions their clients closed, kept a while (PREFIX_KEEP_MS, MAX_KEPT_PREFIXES,
 * least recently used first out), so a new session of the same client key that shares their first positions starts
 * from a copy instead of prefilling them again (its ticket's `fork`: the tracker routes it here for that, prefix
 * affinity). Keyed by the session that left it, never by content: only the key that ran a session can start from it,
 * so no client reads or poisons another's cache. It lives inside the KV budget: an open that needs room takes it first.
 */
export class PrefixCache {
  private readonly kept = new Map<string, Kept>()

  constructor(
    private readonly keepMs = PREFIX_KEEP_MS,
    private readonly maxKept = MAX_KEPT_PREFIXES,
  ) {}

  /** KV tokens the kept caches reserve. */
  get tokens(): number {
    let n = 0
    for (const k of this.kept.values()) n += k.tokens
    return n
  }

  get size(): number {
    return this.kept.size
  }

  /**
   * Keeps a session its client closed, if it can be started from (its runtime copies prefixes, it ran some positions,
   * it is not a probe); else frees it. Returns whether it was kept.
   */
  keep(session: string, served: ServedSession, now: number): boolean {
    const positions = served.order.next
    if (served.probe || served.steps.busy || served.runtime.copyPrefix === undefined || positions === 0) return false
    this.drop(session)
    this.kept.set(session, {
      runtime: served.runtime,
      clientKey: served.clientKey,
      blocks: served.open.blocks,
      positions,
      tokens: served.open.maxTokens,
      keptAt: now,
    })
    while (this.kept.size > this.maxKept) this.dropOldest()
    return true
  }

  /**
   * Gives up the least recently used caches until they reserve at most `room` tokens (an open needs the rest), all
   * but `spare` (the one the open starts from). Returns how many were given up.
   */
  free(room: number, spare?: string): number {
    let given = 0
    for (const id of [...this.kept.keys()]) {
      if (this.tokens <= Math.max(0, room)) break
      if (id === spare) continue
      this.drop(id)
      given++
    }
    return given
  }

  /** Frees the caches kept longer than the keep time. */
  sweep(now: number): void {
    for (const [id, k] of this.kept) if (now - k.keptAt > this.keepMs) this.drop(id)
  }

  clear(): void {
    for (const id of [...this.kept.keys()]) this.drop(id)
  }

  /**
   * Starts `child` (just opened for `request` on `ticket`, whose fork names the session and positions) from the cache
   * of the session it forks: that session open here (idle), or kept after its close. It must be the same client key's,
   * on the same blocks, holding at least the positions asked. Throws `prefix_gone` otherwise: the client plans again
   * without the fork (the prompt is prefilled whole).
   */
  start(
    child: ServingSession,
    ticket: Ticket,
    request: Pick<OpenSession, 'blocks'>,
    open: ServedSession | undefined,
    now: number,
  ): void {
    const fork = ticket.fork
    if (fork === undefined) return
    const { source, kept } = this.source(ticket, request, open)
    try {
      child.copyPrefix?.(source.runtime, fork.position)
    } catch (error) {
      throw new NeuronError(
        'prefix_gone',
        `the cache of session ${fork.session} could not be copied here (${(error as Error).message}); plan the ` +
          'route again without the fork.',
        { session: fork.session },
      )
    }
    if (kept !== undefined && source === kept) {
      // used: the least recently used is given up first
      this.kept.delete(fork.session)
      kept.keptAt = now
      this.kept.set(fork.session, kept)
    }
  }

  /**
   * What a fork's ticket starts from here, checked before its open is admitted (so a refused one gives up nothing):
   * the session it names, open here and idle or kept after its close, of the ticket's client key, on the open's blocks,
   * holding the positions asked. Throws `prefix_gone` otherwise.
   */
  source(
    ticket: Ticket,
    request: Pick<OpenSession, 'blocks'>,
    open: ServedSession | undefined,
  ): { source: { readonly runtime: ServingSession }; kept: Kept | undefined } {
    const fork = ticket.fork
    if (fork === undefined) throw new NeuronError('internal', 'a fork was looked up for a ticket without one')
    const kept = this.kept.get(fork.session)
    const source =
      open !== undefined && !open.steps.busy
        ? {
            runtime: open.runtime,
            clientKey: open.clientKey,
            blocks: open.open.blocks,
            positions: open.order.next,
          }
        : kept
    if (
      source === undefined ||
      source.runtime.copyPrefix === undefined ||
      source.clientKey !== ticket.clientKey ||
      source.blocks[0] !== request.blocks[0] ||
      source.blocks[1] !== request.blocks[1] ||
      source.positions < fork.position
    )
      throw new NeuronError(
        'prefix_gone',
        `this host no longer holds the first ${fork.position} positions of session ${fork.session} for this key ` +
          'and these blocks (given up, or never held); plan the route again without the fork.',
        { session: fork.session },
      )
    return { source, kept }
  }

  private dropOldest(): void {
    const oldest = this.kept.keys().next()
    if (!oldest.done) this.drop(oldest.value)
  }

  private drop(session: string): void {
    const k = this.kept.get(session)
    if (k === undefined) return
    this.kept.delete(session)
    k.runtime.close()
  }
}
