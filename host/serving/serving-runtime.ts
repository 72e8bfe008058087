import type { BatchOutcome, ForwardOptions, SessionOptions, ShardSession } from '../../native'

/** What a shard server needs of one session: the native ShardSession, or a wrapper around one. */
export type ServingSession = Pick<ShardSession, 'forward' | 'sample' | 'close' | 'blocks' | 'takesTokens'> & {
  /**
   * Takes `source`'s first `n` cached positions (ShardSession.copyPrefix): a session started from another's cache (a
   * ticket's fork, prefix-cache.ts). Absent: such a session is refused here (`prefix_gone`).
   */
  copyPrefix?(source: ServingSession, n: number): void
}

/** One session's step in a batch. */
export type ServingStep = {
  session: ServingSession
  input: Int32Array | Float32Array | Uint16Array
  options?: ForwardOptions
}

/**
 * A session's options, and the client key its ticket names (for a
 * wrapper that accounts per key; the native runtime ignores it).
 */
export interface ServingSessionOptions extends SessionOptions {
  readonly clientKey?: string
}

/** What a host needs of its loaded blocks: the native ShardRuntime, or a wrapper around one. */
export interface ServingRuntime {
  openSession(options: ServingSessionOptions): ServingSession
  dispose(): void
  /** Whether forwardBatch can run this family (plain per-position K and V caches); absent: one session per graph. */
  readonly canBatch?: boolean
  /** Whether a session rolls back to any earlier position (a conversation's edit); absent: it does not. */
  readonly canRollBack?: boolean
  /** Whether a session rolls back a verify step's rejected drafts (speculation); absent: it does not. */
  readonly rollsBackDrafts?: boolean
  /**
   * Several sessions' steps in one graph, each settling on its
   * own (ShardRuntime.forwardBatch; its sessions are its own).
   */
  forwardBatch?(steps: ServingStep[]): Promise<BatchOutcome[]>
}
