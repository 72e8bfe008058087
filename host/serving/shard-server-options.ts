import type { HopLink } from '../../dataplane/hop-link'
import type { Receipt, SeamFacts } from '../../protocol'
import type { DialBackProver } from '../network/dial-back-answer'
import type { AdmissionLimits, TicketTerms } from './admission'
import type { ReceiptSigner } from './step/seal'

/** What a shard server is given (shard-server.ts). */
export interface ShardServerOptions {
  readonly modelId: string
  readonly blocks: readonly [number, number]
  readonly embed: boolean
  readonly head: boolean
  readonly nEmbd: number
  /** The manifest's seams (what crosses each boundary); without them a seam is nEmbd values alone. */
  readonly seams?: SeamFacts
  readonly maxSessions: number
  /** Largest frame accepted, bytes; larger ones get a `frame_too_large` error. */
  readonly maxFrameBytes?: number
  /** A session nobody has used for this long is closed and its KV cache freed. */
  readonly idleSessionMs?: number
  readonly log?: (line: string) => void
  /** Signs a receipt for every step it serves (the host's NodeIdentity); without it, answers carry none. */
  readonly signer?: ReceiptSigner
  /** Told every receipt signed: the host hands them to the tracker itself, so a client that vanishes still pays. */
  readonly onReceipt?: (receipt: Receipt) => void
  /**
   * Told when a session closes: the tracker counts the sessions it routed here as open until it hears the host's count.
   */
  readonly onSessionFreed?: () => void
  /**
   * What an open's ticket must name: signed by the tracker's key
   * (undefined until the tracker said it), for this host and manifest.
   */
  readonly tickets: Omit<TicketTerms, 'modelId'>
  /** KV capacity per session, the KV budget over all sessions and sessions per client key (see admissionLimits). */
  readonly limits?: Partial<Omit<AdmissionLimits, 'maxSessions'>>
  /** A full host gives up a squatted session unstepped this long to a waiting key (default EVICT_IDLE_MS). */
  readonly evictIdleMs?: number
  /** How long a session's cache stays after its client closed it, for its next session to start from (5 min). */
  readonly prefixKeepMs?: number
  /**
   * A prompt's rows per tick while other sessions step (step-batcher.ts, default PREFILL_CHUNK_TOKENS = 64): what a
   * decode step waits on another session's prompt, at most. 0: prompts run whole.
   */
  readonly prefillChunkTokens?: number
  /**
   * A session opened and never stepped is closed after this long (default 30 s): an open alone holds a slot. A hop
   * after the first has longer by the time its prompt may take upstream (served-session.ts's upstreamWaitMs).
   */
  readonly unsteppedSessionMs?: number
  /** WebSocket connections at once (default 256), and frames one connection may have in flight (default 8). */
  readonly maxConnections?: number
  readonly maxInFlightPerConnection?: number
  /** Signs the tracker's dial-back at DIAL_BACK_PATH on the data-plane port (absent: it answers 503). */
  readonly dialBack?: DialBackProver
  /**
   * An artifact of the model (last hop only): its vocabulary is loaded on
   * the first session with a grammar; without it grammars are refused.
   */
  readonly vocabularyFrom?: string | undefined
  /** Sends to a caller not on the data-plane port (a punched channel) unasked; false where it is none open here. */
  readonly push?: (caller: string, bytes: Uint8Array) => boolean
  /**
   * A link over a channel punched to another host (a successor that takes no connections, forwarded to hop to hop), or
   * undefined where none opens soon.
   */
  readonly punchTo?: (hostId: string) => Promise<HopLink | undefined>
}
