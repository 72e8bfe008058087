// A client's prefix book: what its ended sessions' hops still hold (each host keeps a closed session's cache a while
// for the same key: host/serving/prefix-cache.ts), so a new generation whose prompt begins with those tokens asks the
// tracker for the same hosts (route.plan's fork) and steps only the tokens after them.
import type { HopInput } from '../../dataplane/hop-frames'
import { NeuronError, type Receipt, type RouteHop } from '../../protocol'
import type { AuditableHop } from '../step-audits'
import { cutHistory, sharedPrefix } from './turn-history'

/** Fewest shared tokens worth a fork: below it the prefill saved is less than the planning's bother. */
export const MIN_SHARED_TOKENS = 32
/** How long an entry is asked for: less than the hosts keep a closed session's cache (PREFIX_KEEP_MS, 5 min). */
export const PREFIX_BOOK_MS = 4 * 60_000
/** Entries kept, and the bytes of hop inputs they hold (an audit or failover of a forked session needs them). */
export const MAX_BOOK_ENTRIES = 16
export const MAX_BOOK_BYTES = 64 * 1024 * 1024

/** One hop of an ended session as the book keeps it: its place on the route and what it was sent and signed. */
interface BookHop {
  readonly hop: RouteHop
  readonly inputs: readonly HopInput[]
  readonly receipts: readonly (Receipt | undefined)[]
  readonly sketches: readonly (Uint8Array | undefined)[]
}

interface Entry {
  readonly session: string
  /** Whose: only a session of the same scope starts from it (GenerateRequest.prefixScope). */
  readonly scope: string
  readonly modelId: string
  /** The tokens whose positions its hops hold, in order. */
  readonly tokens: readonly number[]
  readonly hops: readonly BookHop[]
  readonly bytes: number
  readonly at: number
}

/** What a new generation may start from: an ended session and how many of its positions the prompt shares. */
export interface PrefixMatch {
  readonly session: string
  readonly position: number
  readonly hops: readonly BookHop[]
}

export class PrefixBook {
  private readonly entries: Entry[] = []

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Records an ended session whose every step's every input and receipt the client holds (none forwarded): its hops
   * keep its cache a while. Sessions shorter than MIN_SHARED_TOKENS are not worth it.
   */
  record(
    session: string,
    scope: string,
    modelId: string,
    tokens: readonly number[],
    hops: readonly AuditableHop[],
  ): void {
    if (tokens.length < MIN_SHARED_TOKENS || hops.length === 0) return
    let bytes = 0
    for (const h of hops) {
      if (h.receipts.length !== h.inputs.length || h.receipts.some((r) => r === undefined)) return
      for (const i of h.inputs) {
        // a step forwarded host to host that the client never saw (hop-to-hop.ts's placeholder): not replayable
        if (i.dtype === 'json') return
        bytes += i.payload.byteLength
      }
    }
    if (bytes > MAX_BOOK_BYTES) return
    const kept = hops.map((h) => ({
      hop: h.hop,
      inputs: [...h.inputs],
      receipts: [...h.receipts],
      sketches: [...h.sketches],
    }))
    this.entries.push({ session, scope, modelId, tokens: [...tokens], hops: kept, bytes, at: this.now() })
    this.trim()
  }

  /**
   * The entry of `scope` sharing the most first tokens with `prompt` (at least MIN_SHARED_TOKENS, and fewer than the
   * whole prompt: step 1 must carry one token at least), the newest of equals; or undefined.
   */
  find(scope: string, modelId: string, prompt: readonly number[]): PrefixMatch | undefined {
    this.trim()
    let best: PrefixMatch | undefined
    // newest first: of equals, the cache its hosts are likeliest to keep still
    for (const e of [...this.entries].reverse()) {
      if (e.modelId !== modelId || e.scope !== scope) continue
      const shared = Math.min(sharedPrefix(e.tokens, prompt), prompt.length - 1)
      if (shared >= MIN_SHARED_TOKENS && shared > (best?.position ?? 0))
        best = { session: e.session, position: shared, hops: e.hops }
    }
    return best
  }

  /** Forgets an entry its hosts no longer hold (an open answered `prefix_gone`). */
  forget(session: string): void {
    const i = this.entries.findIndex((e) => e.session === session)
    if (i >= 0) this.entries.splice(i, 1)
  }

  /** Drops entries past PREFIX_BOOK_MS, then the oldest past the count and byte bounds. */
  private trim(): void {
    const now = this.now()
    for (let i = this.entries.length - 1; i >= 0; i--)
      if (now - (this.entries[i]?.at ?? now) > PREFIX_BOOK_MS) this.entries.splice(i, 1)
    let bytes = this.entries.reduce((s, e) => s + e.bytes, 0)
    while (this.entries.length > MAX_BOOK_ENTRIES || bytes > MAX_BOOK_BYTES) bytes -= this.entries.shift()?.bytes ?? 0
  }
}

/**
 * A forked session's hop starts with the record of the hop it forks, cut to the shared positions: a failover replays
 * them to rebuild a replacement's cache, and an audit re-runs them before the session's own steps (the tracker takes
 * the earlier session's receipts up to the fork's position).
 */
export function seedFromFork(h: AuditableHop, from: BookHop, position: number): void {
  h.inputs.push(...from.inputs)
  h.receipts.push(...from.receipts)
  h.sketches.push(...from.sketches)
  cutHistory(h, position)
}

/** route.plan's `fork` for a match: the earlier session, the positions shared, and the hops that hold them. */
export function forkPlan(match: PrefixMatch): {
  session: string
  position: number
  hops: { hostId: string; blocks: [number, number] }[]
} {
  return {
    session: match.session,
    position: match.position,
    hops: match.hops.map(({ hop }) => ({ hostId: hop.hostId, blocks: [hop.blocks[0], hop.blocks[1]] })),
  }
}

/**
 * The positions the opened hops start with: the match's, when the tracker ticketed every hop as a fork of its session
 * (the same hosts and blocks, in order; each hop's record then starts with the earlier session's, cut there); else 0
 * (it routed elsewhere, and step 1 carries the whole prompt).
 */
export function forkedAt(
  match: PrefixMatch | undefined,
  route: readonly RouteHop[],
  hops: readonly AuditableHop[],
): number {
  if (match === undefined || route.length !== match.hops.length) return 0
  const forked = route.every((h, i) => {
    const from = match.hops[i]?.hop
    const fork = h.ticket?.fork
    return (
      from !== undefined &&
      fork?.session === match.session &&
      fork.position === match.position &&
      h.hostId === from.hostId &&
      h.blocks[0] === from.blocks[0] &&
      h.blocks[1] === from.blocks[1]
    )
  })
  if (!forked) return 0
  for (const [i, h] of hops.entries()) seedFromFork(h, match.hops[i] as BookHop, match.position)
  return match.position
}

/**
 * An open that failed because a host no longer holds the fork's cache (`prefix_gone`: given up under pressure, or
 * restarted): the book forgets the entry, so the next try (whenSessionFree asks again) plans without it. Rethrows.
 */
export function forkGone(error: unknown, book: PrefixBook | undefined, match: PrefixMatch | undefined): never {
  if (match !== undefined && error instanceof NeuronError && error.code === 'prefix_gone') book?.forget(match.session)
  throw error
}
